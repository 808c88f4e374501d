use agentic_runtime::{Runtime, agentic_function};

#[agentic_function]
fn not_async(runtime: &Runtime) -> usize {
    runtime.policy().max_retries() as usize
}

fn main() {}
