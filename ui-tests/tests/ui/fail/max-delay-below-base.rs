use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(max_delay_ms = 100)]
async fn below_both(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(session_base_delay_ms = 500, max_delay_ms = 1000)]
async fn below_exec(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
