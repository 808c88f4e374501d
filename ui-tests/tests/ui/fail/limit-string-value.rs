use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(max_cost_usd = "0.25")]
async fn quoted(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
