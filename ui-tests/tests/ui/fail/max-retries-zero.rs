use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(max_retries = 0)]
async fn never(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
