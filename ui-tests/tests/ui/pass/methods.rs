//! Inherent methods on `&self`, `&mut self` and `self`, the runtime in a field being left alone.
#![deny(warnings)]
#![allow(dead_code)]

use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

struct Agent {
    name: String,
    fallback: Runtime,
}

impl Agent {
    fn check(reply: &Reply) -> Result<(), String> {
        if reply.text().is_empty() { Err("empty".into()) } else { Ok(()) }
    }

    /// On `&self`, with a validator named through `Self`.
    #[agentic_function(max_retries = 2, validate = Self::check)]
    async fn on_ref(&self, runtime: &Runtime) -> Result<Reply, ExecError> {
        // `self.fallback.exec` is another receiver: untouched.
        let _ = self.fallback.exec("not rewritten").await;
        runtime.exec(self.name.as_str()).await
    }

    #[agentic_function(max_retries = 2)]
    async fn on_mut(&mut self, runtime: &Runtime) -> Result<Reply, ExecError> {
        self.name.push('!');
        runtime.exec(self.name.as_str()).await
    }

    #[agentic_function(max_retries = 2)]
    async fn by_value(self, runtime: &Runtime) -> Result<Reply, ExecError> {
        runtime.exec(self.name).await
    }

    #[agentic_function(max_retries = 2)]
    pub(crate) async fn associated(runtime: &Runtime) -> Result<Reply, ExecError> {
        runtime.exec("no self").await
    }
}

struct Generic<T>(T);

impl<T: AsRef<str>> Generic<T> {
    fn check(reply: &Reply) -> Result<(), std::fmt::Error> {
        let _ = reply;
        Ok(())
    }

    #[agentic_function(validate = Self::check)]
    async fn generic_self(&self, runtime: &Runtime) -> Result<Reply, ExecError> {
        runtime.exec(self.0.as_ref()).await
    }
}

fn main() {}
