use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(max_retries = 2, jitter = "full", max_retries = 3, jitter = "equal")]
async fn duplicate(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
