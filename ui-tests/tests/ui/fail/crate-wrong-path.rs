use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(crate = "agentic")]
async fn wrong_path(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
