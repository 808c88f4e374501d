use agentic_runtime::{Runtime, agentic_function};

#[agentic_function]
async fn unnamed(_: &Runtime) {}

fn main() {}
