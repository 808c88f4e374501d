//! The test MCP server over stdio (`agentic_test_support::mcp`), for agentic-mcp's tests.
//!
//! Arguments: `--page-size N`, `--endless-pages`, `--never-initialize`, `--ignore-eof` (keep
//! running after stdin closes), `--bad-tools`, `--many-tools N`, `--wordy-description BYTES` (see
//! `Options`), `--record PATH`,
//! `--stderr TEXT` (a line written to stderr at start, for the tests of the client's report of a
//! dying server), `--exit-at-start N` (exit with status N before reading anything).

use std::path::PathBuf;

use agentic_test_support::mcp::{Options, serve_stdio};

fn main() {
    let mut options = Options::default();
    let mut record = None;
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        let mut value = || arguments.next().unwrap_or_else(|| usage(&format!("`{argument}` needs a value")));
        match argument.as_str() {
            "--page-size" => {
                options.page_size = Some(value().parse().unwrap_or_else(|_| usage("`--page-size` takes a number")))
            }
            "--endless-pages" => options.endless_pages = true,
            "--never-initialize" => options.never_initialize = true,
            "--ignore-eof" => options.ignore_eof = true,
            "--bad-tools" => options.bad_tools = true,
            "--many-tools" => options.many_tools = number(&value(), "--many-tools"),
            "--wordy-description" => options.wordy_description = number(&value(), "--wordy-description"),
            "--record" => record = Some(PathBuf::from(value())),
            "--stderr" => eprintln!("{}", value()),
            "--exit-at-start" => {
                std::process::exit(value().parse().unwrap_or_else(|_| usage("`--exit-at-start` takes a number")))
            }
            other => usage(&format!("unknown argument `{other}`")),
        }
    }
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
    runtime.block_on(serve_stdio(options, record));
}

fn number(value: &str, flag: &str) -> usize {
    value.parse().unwrap_or_else(|_| usage(&format!("`{flag}` takes a number")))
}

fn usage(problem: &str) -> ! {
    eprintln!("agentic-mcp-test-server: {problem}");
    eprintln!(
        "usage: agentic-mcp-test-server [--page-size N] [--endless-pages] [--never-initialize] [--ignore-eof] [--bad-tools] [--many-tools N] [--wordy-description BYTES] [--record PATH] [--stderr TEXT] [--exit-at-start N]"
    );
    std::process::exit(2)
}
