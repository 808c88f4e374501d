use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

fn check(_reply: &Reply) -> Result<(), String> {
    Ok(())
}

#[agentic_function(validate = "check")]
async fn string(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(validate = |reply: &Reply| check(reply))]
async fn closure(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(validate = 3)]
async fn number(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
