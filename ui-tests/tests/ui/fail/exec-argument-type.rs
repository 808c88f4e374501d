use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function]
async fn not_a_prompt(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec(42).await
}

fn main() {}
