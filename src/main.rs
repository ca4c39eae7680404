use clap::Parser;

fn main() {
    let cli = compactd::cli::Cli::parse();
    std::process::exit(compactd::cli::run(cli));
}
