use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(max_retries, session_retries(1), 3, "full", budget_ms =, timeout_ms: 5)]
async fn malformed(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(, max_retries = 1)]
async fn leading_comma(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(max_calls(), jitter)]
async fn no_values(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
