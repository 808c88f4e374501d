use agentic_runtime::{ExecError, Reply, RetryPolicy, Runtime, agentic_function};

// The preset's five calls are more than one attempt with one session retry can make.
#[agentic_function(preset = gemini_free_tier, max_retries = 1, session_retries = 1)]
async fn fewer_calls(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

// A key beside the preset is judged with the preset's values: its cap is 60 s.
#[agentic_function(preset = gemini_free_tier, session_base_delay_ms = 90_000)]
async fn above_the_cap(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

// Wrong whatever the `const` holds: reported on the key.
#[agentic_function(preset = QUICK, max_retries = 0)]
async fn zero(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

const QUICK: RetryPolicy = RetryPolicy::new().with_max_retries(2);

fn main() {}
