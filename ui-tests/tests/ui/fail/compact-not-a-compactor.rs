use agentic_runtime::compact::DropOldest;
use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

struct NotACompactor;

static NOT_A_COMPACTOR: NotACompactor = NotACompactor;

fn drop_oldest() -> DropOldest {
    DropOldest::keeping(2)
}

#[agentic_function(compact = NOT_A_COMPACTOR)]
async fn wrong_type(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(compact = drop_oldest)]
async fn a_function(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(compact = MISSING)]
async fn not_found(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
