use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function]
async fn two(primary: &Runtime, backup: &agentic_runtime::Runtime) -> Result<Reply, ExecError> {
    match primary.exec("hello").await {
        Ok(reply) => Ok(reply),
        Err(_) => backup.exec("hello").await,
    }
}

fn main() {}
