//! Durable runs on Restate: an agent function as a Restate handler, each model call and each tool
//! call a journaled step (docs/design.md §24).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
