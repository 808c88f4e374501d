use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(max_retries = 1, session_retries = 0, timeout_ms = 5000, budget_ms = 1000)]
async fn slow(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
