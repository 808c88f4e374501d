use std::sync::Arc;

use agentic_runtime::{Runtime, agentic_function};

#[agentic_function]
async fn shared(runtime: Arc<Runtime>) -> usize {
    runtime.policy().max_retries() as usize
}

#[agentic_function]
async fn boxed(runtime: Option<&Runtime>) -> bool {
    runtime.is_some()
}

fn main() {}
