//! A `budget_ms` shorter than the nominal backoff is valid: the retries that fit are made, then the
//! exec stops with kind `refused`, saying which retry did not fit.
#![deny(warnings)]

use agentic_runtime::{ExecError, ExecErrorKind, Reply, Runtime, ScriptedProvider, Scripted, agentic_function};

#[agentic_function(budget_ms = 10_000, jitter = "none")]
async fn defaults(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(max_retries = 2, session_retries = 1, max_delay_ms = 2000, budget_ms = 5500)]
async fn exactly_the_backoff(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {
    let clock = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    let provider = ScriptedProvider::new(Scripted::error("503 Service Unavailable").times(12));
    let error = clock.block_on(defaults(&Runtime::new(provider.clone()))).unwrap_err();
    // Calls at 0, 2 and 6 s; the 8 s wait after the third does not fit in the 4 s left.
    assert_eq!(provider.calls(), 3);
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert_eq!(error.stopped_by(), Some("`budget_ms` (10000) would run out: the wait of 8 s does not fit in the 4 s left"));

    let provider = ScriptedProvider::new([Scripted::error("503 Service Unavailable")]).otherwise(Scripted::ok("fine"));
    let reply = clock.block_on(exactly_the_backoff(&Runtime::new(provider))).unwrap();
    assert_eq!(reply.text(), "fine");
}
