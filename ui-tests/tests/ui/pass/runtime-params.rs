//! The runtime parameter: owned, `&`, `&mut`, with a lifetime, under any path, with any name.
#![deny(warnings)]
#![allow(dead_code)]

use agentic_runtime as rt;
use agentic_runtime::{ExecError, Reply, agentic_function};

#[agentic_function]
async fn owned(runtime: rt::Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function]
async fn owned_mut(mut runtime: agentic_runtime::Runtime) -> Result<Reply, ExecError> {
    let _previous = std::mem::replace(&mut runtime, rt::Runtime::new(rt::ScriptedProvider::new([])));
    runtime.exec("hello").await
}

#[agentic_function]
async fn shared(r: &::agentic_runtime::Runtime) -> Result<Reply, ExecError> {
    r.exec("hello").await
}

#[agentic_function]
async fn exclusive(model: &mut rt::Runtime) -> Result<Reply, ExecError> {
    *model = rt::Runtime::builder(rt::ScriptedProvider::new([])).with_system("changed").build()?;
    let reply = model.exec("hello").await;
    *model = model.clone();
    reply
}

#[agentic_function]
async fn with_lifetime<'a>(runtime: &'a mut agentic_runtime::Runtime, other: u32) -> Result<Reply, ExecError> {
    runtime.exec(other.to_string()).await
}

#[agentic_function]
async fn parenthesized(runtime: &rt::Runtime) -> Result<Reply, ExecError> {
    (runtime).exec("hello").await
}

fn main() {}
