//! The success path of a resilient call adds no heap allocation of the retry machinery's own: with an
//! operation that allocates nothing, `Resilient::new(..).call(..)` allocates nothing.

use std::hint::black_box;

use agentic_runtime::RetryPolicy;
use agentic_runtime::resilient::Resilient;

use agentic_test_support::counting_alloc::{Counting, count};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

async fn operation() -> Result<u64, std::io::Error> {
    Ok(black_box(42))
}

const DEFAULTS: RetryPolicy = RetryPolicy::new();
/// Every cap on: a deadline, a per-attempt timeout (a `tokio::time::timeout_at` around the attempt),
/// a call cap and jitter.
const CAPPED: RetryPolicy = RetryPolicy::new()
    .with_jitter(agentic_runtime::policy::Jitter::Full)
    .with_max_delay_ms(Some(10_000))
    .with_max_calls(Some(3))
    .with_timeout_ms(5_000)
    .with_budget_ms(Some(60_000));

#[test]
fn resilient_success_path_allocates_nothing() {
    let tokio = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    // Warm up lazily initialised state (tokio's thread-locals, fastrand's thread-local RNG).
    tokio.block_on(Resilient::new("warm", &CAPPED).call(operation)).unwrap();

    assert!(count(&tokio, async { black_box(Box::new(1u8)) }).0 > 0, "the counter counts");
    for policy in [&DEFAULTS, &CAPPED] {
        for _ in 0..3 {
            let (made, value) = count(&tokio, async { Resilient::new("op", policy).call(operation).await });
            assert_eq!(value.unwrap(), 42);
            assert_eq!(made, 0, "a resilient call that succeeded at once made {made} allocations ({policy:?})");
        }
    }
    // A `Resilient` kept and called again allocates nothing either.
    let kept = Resilient::new("kept", &CAPPED).with_jitter_seed(1);
    for _ in 0..3 {
        let (made, value) = count(&tokio, kept.call(operation));
        assert_eq!((made, value.unwrap()), (0, 42));
    }
    // A name given as a `String` is the caller's allocation, not the machinery's; it is moved, not copied.
    let name = String::from("op");
    let (made, value) = count(&tokio, async { Resilient::new(name, &DEFAULTS).call(operation).await });
    assert_eq!(value.unwrap(), 42);
    assert_eq!(made, 0);
}
