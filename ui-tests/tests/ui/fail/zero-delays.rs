use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(
    session_base_delay_ms = 0,
    exec_base_delay_ms = 0,
    retry_after_cap_ms = 0,
    max_delay_ms = 0,
    timeout_ms = 0,
    budget_ms = 0,
)]
async fn zero(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
