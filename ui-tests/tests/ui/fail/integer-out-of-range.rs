use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(
    max_retries = 5000000000,
    budget_ms = 99999999999999999999999,
    session_retries = -1,
    max_calls = 3u8,
    timeout_ms = -2.5,
)]
async fn out_of_range(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
