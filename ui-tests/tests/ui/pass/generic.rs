//! Generic functions: type parameters, where clauses, const generics.
#![deny(warnings)]
#![allow(dead_code)]

use std::fmt::Display;

use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};
use agentic_runtime::exec::Prompt;

#[agentic_function(max_retries = 2)]
async fn generic<P: Into<Prompt>>(runtime: &Runtime, prompt: P) -> Result<Reply, ExecError> {
    runtime.exec(prompt).await
}

#[agentic_function(max_retries = 2)]
async fn with_where<T, const N: usize>(runtime: &Runtime, items: [T; N]) -> Result<Vec<String>, ExecError>
where
    T: Display,
{
    let mut replies = Vec::with_capacity(N);
    for item in items {
        replies.push(runtime.exec(item.to_string()).await?.into_text());
    }
    Ok(replies)
}

fn main() {}
