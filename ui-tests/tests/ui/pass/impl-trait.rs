//! `impl Trait` arguments and an `impl Trait` return type.
#![deny(warnings)]
#![allow(dead_code)]

use std::fmt::Display;

use agentic_runtime::{ExecError, Runtime, agentic_function};
use agentic_runtime::exec::Prompt;

#[agentic_function(session_retries = 1)]
async fn impl_argument(runtime: &Runtime, prompt: impl Into<Prompt>) -> Result<String, ExecError> {
    Ok(runtime.exec(prompt).await?.into_text())
}

#[agentic_function(session_retries = 1)]
async fn impl_return(runtime: &Runtime, prompts: impl IntoIterator<Item = String>) -> impl Display {
    let mut last = String::new();
    for prompt in prompts {
        if let Ok(reply) = runtime.exec(prompt).await {
            last = reply.into_text();
        }
    }
    last
}

fn main() {}
