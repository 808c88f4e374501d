//! The two layers' verdicts on a failure, each with the rule that decided it.
//!
//! Layer 1 ([`session_verdict`], [`is_retryable_error`]) decides whether `AgentSession` retries a
//! failed model call. Layer 2 ([`exec_verdict`]) decides whether `Runtime::exec` retries a failed
//! attempt, stops for good, or returns a programming error unchanged. The rules and their order are
//! docs/design.md §4 and §5; every verdict carries its [`Reason`]. [`verdicts`] gives both for one
//! failed call from one pass over its text, as the exec loop does: the text is lowercased once and
//! one automaton finds every marker of every pattern set; a regex runs only to confirm a marker
//! found.

mod both;
mod exec;
mod hint;
pub(crate) mod patterns;
mod reason;
mod scan;
mod session;

pub(crate) use both::failure_scan;
pub use both::verdicts;
pub(crate) use exec::exec_verdict_of;
pub use exec::{ExecAction, ExecVerdict, exec_verdict};
pub use hint::retry_hint;
pub(crate) use hint::retry_hint_of;
pub(crate) use patterns::TARGET_MARKERS;
pub use reason::Reason;
pub(crate) use scan::{Markers, Scan};
pub(crate) use session::session_verdict_of;
pub use session::{SessionVerdict, is_context_overflow, is_retryable_error, is_transient_status, session_verdict};
