//! `compactd serve`: the application [`startup`](crate::startup) builds, run until a
//! shutdown signal.

use crate::config::Config;
use crate::startup::Application;

use super::error::CliError;

pub fn run(mut config: Config, listen: Option<std::net::SocketAddr>) -> Result<(), CliError> {
    if let Some(addr) = listen {
        config.listen = addr;
    }
    crate::telemetry::init(config.log_format);
    let runtime = tokio::runtime::Runtime::new().map_err(CliError::Runtime)?;
    let result = runtime.block_on(async move {
        // Fails before listening when the prompts or the summarizer are unusable.
        let app = Application::build(config).await?;
        app.run_until_stopped().await.map_err(CliError::Server)
    });
    // Dropping the runtime would wait for every blocking task (a parse of a huge body
    // still running after the grace period); the grace period is already over.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    result
}
