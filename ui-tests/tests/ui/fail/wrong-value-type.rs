use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

const TIMEOUT: u64 = 5000;

#[agentic_function(
    max_retries = "3",
    session_retries = true,
    budget_ms = 1.5,
    timeout_ms = TIMEOUT,
    max_delay_ms = 2 * 1000,
    jitter = 3,
    exec_base_delay_ms = 'x',
    retry_after_cap_ms = "sixty seconds",
)]
async fn wrong_types(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
