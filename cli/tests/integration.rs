//! The CLI's integration tests, each running the built `agentic` binary.
//!
//! One test binary for these files (each a module): one link and one build of what they share,
//! instead of one per file.

mod ask;
mod ask_fallback;
mod ask_keys;
mod ask_pacing;
mod ask_progress;
mod ask_records;
mod ask_spend;
mod ask_stream;
mod bounds;
mod classify;
mod common;
mod grade;
mod help;
mod journal;
mod simulate;
