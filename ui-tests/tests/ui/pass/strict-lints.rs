//! The generated code passes the allow-by-default lints a strict crate turns on.
#![deny(warnings, missing_docs)]
#![deny(
    unused_qualifications,
    unused_results,
    unused_lifetimes,
    unreachable_pub,
    trivial_casts,
    trivial_numeric_casts,
    elided_lifetimes_in_paths,
    unsafe_code,
    let_underscore_drop,
    single_use_lifetimes,
    non_ascii_idents,
    unused_import_braces,
    variant_size_differences
)]
#![allow(dead_code)]

use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

fn check(reply: &Reply) -> Result<(), String> {
    if reply.text().is_empty() { Err("empty".to_owned()) } else { Ok(()) }
}

/// Strict.
#[agentic_function(max_retries = 2, session_retries = 1, budget_ms = 60_000, jitter = "full", validate = check)]
async fn strict(runtime: &Runtime, prompt: &str) -> Result<String, ExecError> {
    let first = runtime.exec(prompt).await?;
    let second = async { runtime.exec(first.text()).await }.await?;
    Ok(second.into_text())
}

fn main() {}
