//! A built runtime has no setter: a clone cannot be given a fallback, a breaker, a quota, a store or
//! pacing of its own, which would detach it from the state the others share. Those are set on the
//! builder, once, before `build()`.

use agentic_runtime::storm::RetryQuota;
use agentic_runtime::{Runtime, ScriptedProvider};

fn main() {
    let runtime = Runtime::new(ScriptedProvider::new([]));
    let _forked = runtime.clone().with_retry_quota(Some(RetryQuota::standard()));
    let _forked = runtime.clone().with_fallback(ScriptedProvider::new([]));
}
