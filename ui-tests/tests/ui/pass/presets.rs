//! `preset = ...`: a named preset, with keys beside it, and a `const` policy by path, through
//! `Self` too.
#![deny(warnings)]
#![allow(dead_code)]

use agentic_runtime::{ExecError, Reply, RetryPolicy, Runtime, agentic_function};

mod policies {
    use agentic_runtime::RetryPolicy;

    pub const PATIENT: RetryPolicy = RetryPolicy::gemini_free_tier().with_budget_ms(Some(600_000));
}

const QUICK: RetryPolicy = RetryPolicy::new().with_max_retries(2);

/// Gemini's free tier as the preset sets it.
#[agentic_function(preset = gemini_free_tier)]
async fn gemini(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(preset = anthropic, max_calls = 3, jitter = "none")]
async fn anthropic(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(preset = policies::PATIENT)]
async fn by_path(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(preset = QUICK, session_retries = 1, jitter = "full")]
async fn by_name(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

struct Agent;

impl Agent {
    const POLICY: RetryPolicy = RetryPolicy::anthropic().with_max_calls(Some(4));

    #[agentic_function(preset = Self::POLICY)]
    async fn method(&self, runtime: &Runtime) -> Result<Reply, ExecError> {
        runtime.exec("hello").await
    }
}

fn main() {}
