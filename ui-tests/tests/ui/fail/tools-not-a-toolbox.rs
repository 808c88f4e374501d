use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

static NOT_A_TOOLBOX: u32 = 7;

fn not_a_toolbox() -> String {
    String::new()
}

#[agentic_function(tools = NOT_A_TOOLBOX)]
async fn wrong_type(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(tools = not_a_toolbox)]
async fn wrong_function(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(tools = MISSING)]
async fn not_found(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
