use agentic_runtime::agentic_function;

#[agentic_function]
async fn no_runtime(prompt: &str) -> usize {
    prompt.len()
}

struct Agent;

impl Agent {
    #[agentic_function]
    async fn method(&self) {}
}

fn main() {}
