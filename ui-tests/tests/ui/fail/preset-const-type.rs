use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

// A `const` of another type: rustc says which, on the path.
const NOT_A_POLICY: u32 = 3;

#[agentic_function(preset = NOT_A_POLICY)]
async fn wrong_type(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
