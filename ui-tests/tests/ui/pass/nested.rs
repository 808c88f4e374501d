//! `exec` calls in nested blocks, closures, `async` blocks and macros; futures bound first.
#![deny(warnings)]
#![allow(dead_code)]

use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

#[agentic_function(max_retries = 2)]
async fn nested(runtime: &Runtime, prompts: &[&str]) -> Result<Vec<String>, ExecError> {
    let mut texts = Vec::new();
    {
        texts.push(runtime.exec("in a block").await?.into_text());
    }
    let in_async = async { runtime.exec("in an async block").await };
    texts.push(in_async.await?.into_text());
    let in_async_move = async move { runtime.exec("in an async move block").await };
    texts.push(in_async_move.await?.into_text());
    let futures: Vec<_> = prompts.iter().map(|prompt| runtime.exec(*prompt)).collect();
    for future in futures {
        texts.push(future.await?.into_text());
    }
    let fut = runtime.exec("bound first");
    texts.push(fut.await?.into_text());
    match texts.len() {
        0 => texts.push(runtime.exec("in a match arm").await?.into_text()),
        _ if runtime.exec("in a guard").await.is_ok() => {}
        _ => {}
    }
    while texts.len() < 10 {
        texts.push(runtime.exec("in a loop").await?.into_text());
    }
    let (a, b) = tokio::join!(runtime.exec("a"), runtime.exec("b"));
    texts.push(format!("{} {}", a?, b?));
    Ok(texts)
}

/// Attributes on the call (statement attributes land on the expression) are kept.
#[agentic_function]
async fn with_attributes(runtime: &Runtime) {
    #[allow(unused_must_use)]
    runtime.exec("the future is dropped");
    #[allow(clippy::let_underscore_future)]
    let _ = runtime.exec("dropped too");
}

/// A shadowed name is not the runtime: the code keeps its meaning.
#[agentic_function]
async fn shadowed(runtime: &Runtime) -> Result<Reply, ExecError> {
    let answer = runtime.exec("rewritten").await?;
    let runtime = answer.text();
    let _trimmed = runtime.trim();
    Ok(answer)
}

/// A nested function cannot see the outer runtime: its own `runtime` is left alone.
#[agentic_function]
async fn nested_item(runtime: &Runtime) -> Result<Reply, ExecError> {
    async fn helper(runtime: &Runtime) -> Result<Reply, ExecError> {
        runtime.exec("not rewritten").await
    }
    helper(runtime).await?;
    runtime.exec("rewritten").await
}

fn main() {}
