use agentic_runtime::agentic_function;

#[agentic_function]
struct Agent;

#[agentic_function(max_retries = 2)]
const RETRIES: u32 = 2;

#[agentic_function]
impl Agent {}

trait Assistant {
    #[agentic_function]
    async fn answer(&self, runtime: &agentic_runtime::Runtime);
}

fn main() {}
