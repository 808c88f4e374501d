use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(preset = gemini_free)]
async fn typo(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(preset = openai)]
async fn unknown(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(preset = "gemini_free_tier")]
async fn quoted(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(preset = gemini-free-tier)]
async fn kebab(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
