//! A real headless Chromium, driven through chromedriver (WebDriver) by fantoccini.
//!
//! Debian's `chromium` and `chromium-driver` must be installed (`.ci/run` installs them);
//! without them the tests fail, unless `COMPACTD_ALLOW_SKIP=1`, where they print why
//! they skip. Chromium runs as root here, so without its sandbox, and with every
//! background connection off (the machine's network refuses them), in a fresh profile.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::wd::Capabilities;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// A chromedriver process and a browser session; both end when this is dropped.
pub struct Browser {
    pub client: Client,
    driver: Child,
    _profile: TempDir,
}

/// A directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "compactd-{name}-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).expect("temporary directory");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether the browser is installed; panics (CI) or says why it skips.
pub fn available() -> bool {
    let missing: Vec<&str> = [CHROMIUM, CHROMEDRIVER]
        .into_iter()
        .filter(|p| !Path::new(p).exists())
        .collect();
    if missing.is_empty() {
        return true;
    }
    let why = format!(
        "{} missing: install Debian's chromium and chromium-driver (bash .ci/run does)",
        missing.join(", ")
    );
    if std::env::var("COMPACTD_ALLOW_SKIP").as_deref() == Ok("1") {
        eprintln!("skipped: {why}");
        return false;
    }
    panic!("{why}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Browser {
    pub async fn start() -> Browser {
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let profile = TempDir::new("chromium");
        let mut caps = Capabilities::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": CHROMIUM,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1300,1000",
                    format!("--user-data-dir={}", profile.0.display()),
                ],
            }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let mut last = None;
        // chromedriver needs a moment to listen.
        for _ in 0..100 {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => {
                    return Browser {
                        client,
                        driver,
                        _profile: profile,
                    }
                }
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no browser session: {last:?}");
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page.
    pub async fn js(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Waits until `script` returns a truthy value, and returns it. Fails after 60 s: a
    /// page that never gets there is broken (this is not a measure of speed).
    pub async fn until(&self, what: &str, script: &str) -> Value {
        for _ in 0..600 {
            let v = self.js(script, vec![]).await;
            let truthy =
                !matches!(&v, Value::Null | Value::Bool(false)) && v != json!("") && v != json!(0);
            if truthy {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let status = self
            .js(
                "return document.getElementById('status')?.textContent",
                vec![],
            )
            .await;
        panic!("timed out waiting for {what} (status: {status})");
    }

    pub async fn text(&self, css: &str) -> String {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"))
            .text()
            .await
            .expect("text")
    }

    /// Types `keys` into the element with this id.
    pub async fn type_into(&self, id: &str, keys: &str) {
        self.client
            .find(Locator::Id(id))
            .await
            .unwrap_or_else(|e| panic!("#{id}: {e}"))
            .send_keys(keys)
            .await
            .unwrap_or_else(|e| panic!("typing into #{id}: {e}"));
    }

    /// Clicks the element `css` selects.
    pub async fn click(&self, css: &str) {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"))
            .click()
            .await
            .unwrap_or_else(|e| panic!("clicking {css}: {e}"));
    }

    /// Saves a screenshot as a test artefact under target/tmp/inspector/.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.expect("screenshot");
        let dir = artefacts();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("screenshot written");
        path
    }

    /// Ends the session (chromedriver closes the browser).
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        // A test that failed before `close` leaves its browser: end the processes that
        // use this session's own profile directory (and no others).
        let marker = format!("--user-data-dir={}", self._profile.0.display());
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            if cmdline
                .split(|b| *b == 0)
                .any(|arg| arg == marker.as_bytes())
            {
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        }
    }
}

/// Where the tests leave their artefacts (screenshots, reports).
pub fn artefacts() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("inspector");
    std::fs::create_dir_all(&dir).expect("artefact directory");
    dir
}
