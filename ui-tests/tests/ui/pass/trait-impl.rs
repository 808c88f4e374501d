//! `async fn` in traits: an implementation, and a default body in the trait itself.
#![deny(warnings)]
#![allow(dead_code)]

use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

trait Assistant {
    async fn answer(&self, runtime: &Runtime, question: &str) -> Result<Reply, ExecError>;

    /// A provided method.
    #[agentic_function(max_retries = 1)]
    async fn greet(&self, runtime: &Runtime) -> Result<Reply, ExecError> {
        runtime.exec("hello").await
    }
}

struct Echo;

impl Assistant for Echo {
    /// An implementation.
    #[agentic_function(max_retries = 2, session_retries = 0)]
    async fn answer(&self, runtime: &Runtime, question: &str) -> Result<Reply, ExecError> {
        runtime.exec(question).await
    }
}

fn main() {}
