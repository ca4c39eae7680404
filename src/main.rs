use clap::Parser;

/// Small, short-lived allocations dominate a compaction (a string per sentence and
/// phrase); mimalloc serves them from thread-local pages instead of glibc's bins.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = compactd::cli::Cli::parse();
    std::process::exit(compactd::cli::run(cli));
}
