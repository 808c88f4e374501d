//! The integration tests, one binary.

mod durable;
mod server;
