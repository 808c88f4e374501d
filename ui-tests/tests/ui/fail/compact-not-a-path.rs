use agentic_runtime::compact::DropOldest;
use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

static KEEP_TWO: DropOldest = DropOldest::keeping(2);

#[agentic_function(compact = "KEEP_TWO")]
async fn string(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(compact = DropOldest::keeping(2))]
async fn expression(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(compactor = KEEP_TWO)]
async fn misspelt(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
