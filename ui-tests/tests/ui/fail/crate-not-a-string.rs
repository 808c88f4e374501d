use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(crate = agentic_runtime)]
async fn ident(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(crate = 3)]
async fn number(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(crate = "not a path")]
async fn not_a_path(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
