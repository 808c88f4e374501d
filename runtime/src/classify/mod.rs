//! The two layers' verdicts on a failure, each with the rule that decided it.
//!
//! Layer 1 ([`session_verdict`], [`is_retryable_error`]) decides whether the session retry retries a
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
pub use patterns::{OVERFLOW_CODES, QUOTA_CODES};
pub use reason::Reason;
pub(crate) use scan::{Markers, Scan};
pub(crate) use session::session_verdict_of;
pub use session::{SessionVerdict, is_context_overflow, is_retryable_error, is_transient_status, session_verdict};

/// A transient failure's text with a hint: judging it builds the automaton, the confirming regexes
/// and the hint's regex, and walks their first states.
const WARM_TEXT: &str = "ServiceUnavailableError: 503 Service Unavailable: overloaded, please retry in 1s";

/// Builds the classifier's tables now, once per process (docs/design.md §10, "A cold burst"):
/// built on first use, they made the first failures of a fresh process tens of milliseconds slower
/// than its successes, and a breaker that hears failures late lets a whole burst through to a
/// target in an outage. Called when the first runtime with fallbacks (and so breakers) is built.
pub(crate) fn prebuild() {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let scan = Scan::new(WARM_TEXT);
        let verdict = session_verdict_of(&scan, None);
        let hint = retry_hint_of(&scan, None);
        debug_assert!(verdict.retryable && hint.is_some(), "the warm-up text is a transient failure with a hint");
    });
}

#[cfg(test)]
mod tests {
    /// A fresh process (this test binary again, running only the child below): no table before the
    /// first runtime with fallbacks, the tables built once it is.
    #[test]
    fn the_first_runtime_with_fallbacks_builds_the_tables_before_any_failure() {
        let child = "classify::tests::child_builds_the_tables_with_the_first_runtime_with_fallbacks";
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", child, "--nocapture", "--test-threads=1"])
            .env("AGENTIC_CLASSIFY_CHILD", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains("checked in a fresh process"), "{stdout}");
    }

    #[test]
    fn child_builds_the_tables_with_the_first_runtime_with_fallbacks() {
        use std::sync::atomic::Ordering;
        if std::env::var_os("AGENTIC_CLASSIFY_CHILD").is_none() {
            return;
        }
        let built = || super::scan::TABLE_BUILT.load(Ordering::Relaxed);
        let _alone = crate::Runtime::new(crate::ScriptedProvider::new([]));
        assert!(!built(), "nothing was classified yet");
        let _with_fallback = crate::Runtime::builder(crate::ScriptedProvider::new([]))
            .with_fallback(crate::ScriptedProvider::new([]))
            .build()
            .unwrap();
        assert!(built(), "the first runtime with fallbacks built the tables");
        println!("checked in a fresh process");
    }
}
