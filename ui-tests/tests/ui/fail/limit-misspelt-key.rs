use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(max_total_token = 20_000)]
async fn misspelt(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
