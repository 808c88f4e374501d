//! Helpers shared by the tests, benches and fuzz targets of the agentic crates. Not published: the
//! crates take it as a path-only dev-dependency, which `cargo package` leaves out of the published
//! manifests.
//!
//! - [`temp_file`]: a file in the temp directory for one test, removed when dropped.
//! - [`captured_log`]: a `tracing` writer that keeps what it is given.
//! - [`counting_alloc`]: a global allocator that counts this thread's allocations.

#![warn(missing_docs)]

pub mod captured_log;
pub mod counting_alloc;
pub mod temp_file;
