//! The integration tests across crates.
//!
//! One test binary for these files (each a module): one link and one build of what they share,
//! instead of one per file.

mod attribute;
mod budget;
mod builder;
mod classify_exec;
mod classify_session;
mod compact;
mod compact_wire;
mod cooldown;
mod docs_drift;
mod exec_layer;
mod fallback_wires;
mod future_size;
mod gauntlet;
mod journal_hook;
mod otel_spans;
mod pacing_wires;
mod resilient;
mod session_layer;
mod spend_wires;
mod stalls;
mod storm;
mod stream_wires;
mod tool_bounds;
mod tool_loop;
mod tool_sources;
mod typed;
mod typed_cut;
mod typed_tools;
mod typed_wire;
mod usage;
mod wires;
mod worst_case;
