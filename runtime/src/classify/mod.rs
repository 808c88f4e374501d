//! The two layers' verdicts on a failure, each with the rule that decided it.
//!
//! Layer 1 ([`session_verdict`], [`is_retryable_error`]) decides whether `AgentSession` retries a
//! failed model call. Layer 2 ([`exec_verdict`]) decides whether `Runtime::exec` retries a failed
//! attempt, stops for good, or returns a programming error unchanged. The rules and their order are
//! docs/design.md §4 and §5; every verdict carries its [`Reason`].

mod exec;
mod hint;
pub(crate) mod patterns;
mod reason;
mod session;

pub use exec::{ExecAction, ExecVerdict, exec_verdict};
pub use hint::retry_hint;
pub use reason::Reason;
pub use session::{SessionVerdict, is_context_overflow, is_retryable_error, is_transient_status, session_verdict};
