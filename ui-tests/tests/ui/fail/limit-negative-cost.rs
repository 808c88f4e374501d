use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(max_total_tokens = 20_000, max_cost_usd = -0.25)]
async fn paid_to_run(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
