use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(max_total_tokens = 0)]
async fn nothing_to_spend(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
