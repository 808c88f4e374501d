use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(jitter = "random")]
async fn random(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(jitter = full)]
async fn unquoted(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(jitter = agentic_runtime::policy::Jitter::Equal)]
async fn variant(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
