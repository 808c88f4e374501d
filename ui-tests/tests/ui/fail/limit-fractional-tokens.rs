use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(max_output_tokens = 1.5)]
async fn half_a_token(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
