//! The spend limits: every key, as integer and float literals, beside the policy's keys and
//! presets (a `const` one through `Self` too), and a limit the policy's worst case could never
//! reach (a ceiling, not a promise).
#![deny(warnings)]
#![allow(dead_code)]

use agentic_runtime::{ExecError, Reply, RetryPolicy, Runtime, agentic_function};

/// Every limit.
#[agentic_function(
    max_input_tokens = 16_000,
    max_output_tokens = 4_000,
    max_total_tokens = 20_000u64,
    max_tool_calls = 1,
    max_cost_usd = 0.25
)]
async fn every_limit(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(preset = anthropic, max_calls = 2, max_cost_usd = 2, max_tool_calls = 9007199254740992)]
async fn beside_a_preset(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.request("hello").send().await
}

struct Agent;

impl Agent {
    const POLICY: RetryPolicy = RetryPolicy::new().with_max_retries(2);

    #[agentic_function(preset = Self::POLICY, max_cost_usd = 1e-3f64)]
    async fn ask(&self, runtime: &Runtime) -> Result<Reply, ExecError> {
        runtime.exec("hello").await
    }
}

fn main() {}
