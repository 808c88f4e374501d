use agentic_runtime::agentic_function;

#[agentic_function(max_retries = 0, colour = "red", jitter = "fast", max_calls = 100, max_calls = 2)]
fn everything_wrong(prompt: &str) -> usize {
    prompt.len()
}

fn main() {}
