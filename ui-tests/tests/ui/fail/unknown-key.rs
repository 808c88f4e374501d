use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(max_retry = 3, budget = 1000, validator = check, krate = "x", colour = 1)]
async fn unknown(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
