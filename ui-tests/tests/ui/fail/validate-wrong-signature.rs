use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

fn takes_str(_reply: &str) -> Result<(), String> {
    Ok(())
}

struct NotDisplay;

fn error_not_display(_reply: &Reply) -> Result<(), NotDisplay> {
    Ok(())
}

fn returns_bool(_reply: &Reply) -> bool {
    true
}

#[agentic_function(validate = takes_str)]
async fn wrong_argument(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(validate = error_not_display)]
async fn wrong_error(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(validate = returns_bool)]
async fn wrong_return(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(validate = missing)]
async fn not_found(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
