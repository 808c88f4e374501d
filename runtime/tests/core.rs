//! The runtime's integration tests on its core (no HTTP provider).
//!
//! One test binary for these files (each a module): one link and one build of what they share,
//! instead of one per file.

mod durable;
mod durable_compaction;
mod exec_stream;
mod fallback;
mod fuzz_corpus;
mod fuzz_regressions;
mod journal;
mod pacing;
mod spend_account;
mod spend_limits;
mod spend_prices;
mod tool_timeout;
