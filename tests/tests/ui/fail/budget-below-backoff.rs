use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(budget_ms = 10_000)]
async fn defaults(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(max_retries = 2, session_retries = 1, max_delay_ms = 2000, budget_ms = 5500)]
async fn exactly_the_backoff(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
