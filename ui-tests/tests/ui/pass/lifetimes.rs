//! Explicit and elided lifetimes, and a reply that borrows from an argument.
#![deny(warnings)]
#![allow(dead_code)]

use agentic_runtime::{ExecError, Runtime, agentic_function};

#[agentic_function]
async fn explicit<'r, 'p>(runtime: &'r Runtime, prompt: &'p str) -> Result<&'p str, ExecError> {
    runtime.exec(prompt).await?;
    Ok(prompt)
}

#[agentic_function]
async fn elided(runtime: &Runtime, prompt: &str) -> Result<String, ExecError> {
    Ok(runtime.exec(prompt).await?.into_text())
}

struct Context<'a> {
    prompt: &'a str,
}

#[agentic_function]
async fn in_a_struct(context: Context<'_>, runtime: &Runtime) -> Result<String, ExecError> {
    Ok(runtime.exec(context.prompt).await?.into_text())
}

fn main() {}
