//! The chaos server's integration tests.
//!
//! One test binary for these files (each a module): one link and one build of what they share,
//! instead of one per file.

mod boundary;
mod boundary_scenario;
mod common;
mod context_window;
mod faults;
mod forced_tool;
mod fuzz_corpus;
mod outage;
mod per_conversation;
mod rate_limit;
mod reasoning;
mod scenario;
mod schema;
mod server;
mod stated_limit;
mod steps;
mod token_limit;
mod tool_use;
mod usage;
