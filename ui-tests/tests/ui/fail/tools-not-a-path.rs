use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(tools = Toolbox::new())]
async fn expression(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(tools = "TOOLS")]
async fn string(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(tools = || Toolbox::new())]
async fn closure(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(toolbox = TOOLS)]
async fn misspelt(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
