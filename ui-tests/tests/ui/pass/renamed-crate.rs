//! `crate = "..."`: the runtime reached through another name, as a re-exporting crate would.
#![deny(warnings)]
#![allow(dead_code)]

mod reexport {
    pub use agentic_runtime as agentic;
}

use agentic_runtime as renamed;

#[renamed::agentic_function(max_retries = 2, crate = "renamed")]
async fn renamed_crate(runtime: &renamed::Runtime) -> Result<renamed::Reply, renamed::ExecError> {
    runtime.exec("hello").await
}

fn check(_reply: &renamed::Reply) -> Result<(), String> {
    Ok(())
}

#[reexport::agentic::agentic_function(jitter = "full", validate = check, crate = "crate::reexport::agentic")]
async fn through_a_module(runtime: &reexport::agentic::Runtime) -> Result<String, renamed::ExecError> {
    Ok(runtime.exec("hello").await?.into_text())
}

fn main() {}
