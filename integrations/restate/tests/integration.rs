//! The integration tests, one binary.

mod server;
