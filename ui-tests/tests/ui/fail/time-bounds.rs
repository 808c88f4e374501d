use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

// Each bound that could never be reached, and a zero bound, on its own token.
#[agentic_function(idle_timeout_ms = 0, first_token_timeout_ms = 700_000, timeout_ms = 1_200_000)]
async fn unreachable_bounds(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(headers_timeout_ms = 30_000, timeout_ms = 10_000, max_answer_bytes = 0)]
async fn headers_after_the_call(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
