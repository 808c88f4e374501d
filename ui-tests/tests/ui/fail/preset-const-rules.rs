use agentic_runtime::{ExecError, Reply, RetryPolicy, Runtime, agentic_function};

const QUICK: RetryPolicy = RetryPolicy::new().with_max_retries(2);

// Only with the `const`'s values: judged when the constant is evaluated.
#[agentic_function(preset = QUICK, max_calls = 10)]
async fn too_many(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
