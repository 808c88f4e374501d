use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(max_calls = 100)]
async fn defaults(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(max_retries = 2, session_retries = 0, max_calls = 3)]
async fn two_calls(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
