//! A free function, with no keys (the defaults) and with every key.
#![deny(warnings)]
#![allow(dead_code)]

use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

/// The defaults.
#[agentic_function]
async fn defaults(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function()]
async fn empty_parentheses(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn check(_reply: &Reply) -> Result<(), String> {
    Ok(())
}

#[agentic_function(
    max_retries = 4,
    session_retries = 2,
    session_base_delay_ms = 500,
    exec_base_delay_ms = 1_000,
    max_delay_ms = 4000u64,
    jitter = "decorrelated",
    max_calls = 10,
    timeout_ms = 20_000,
    budget_ms = 60_000,
    retry_after_cap_ms = 0x7530,
    validate = check,
    crate = "::agentic_runtime",
)]
pub async fn every_key(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(jitter = "none")]
async fn jitter_none(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(jitter = "full")]
async fn jitter_full(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(jitter = "equal")]
async fn jitter_equal(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(jitter = "proportional")]
async fn jitter_proportional(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

/// No `exec` call at all: nothing to rewrite, and no unused generated item.
#[agentic_function(max_retries = 1)]
async fn no_exec(runtime: &Runtime) -> usize {
    runtime.policy().max_retries() as usize
}

/// A unit return type and a raw identifier.
#[agentic_function]
async fn r#unit(runtime: &Runtime) {
    let _ = runtime.exec("hello").await;
}

fn main() {}
