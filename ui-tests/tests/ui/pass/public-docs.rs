//! The attribute adds a line to the docs, and keeps every other attribute: a documented `pub`
//! function passes `missing_docs`, and `#[must_use]` or `#[inline]` still apply.
#![deny(warnings, missing_docs)]
#![allow(dead_code)]

use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

/// Documented.
#[agentic_function(max_retries = 2)]
#[must_use = "the reply is the point"]
#[inline]
pub async fn documented(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[doc = "Documented with an attribute."]
#[agentic_function(max_retries = 2, budget_ms = 60_000)]
pub async fn attribute_doc(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
