//! How many requests one logical call costs the provider, with and without the retry quota, at
//! 200 concurrent calls: during a full outage, during a 30 % transient error rate, and healthy.
//! Runs the real layers against the scripted provider on a paused clock (instant on the wall clock,
//! and the same figures every run: the error sequences and the jitter are seeded).
//!
//! ```text
//! cargo run --example amplification
//! ```

use agentic_runtime::storm::RetryQuota;
use agentic_runtime::{Runtime, Scripted, ScriptedProvider};

const CALLS: usize = 200;

fn provider(error_percent: u8) -> ScriptedProvider {
    let mut rng = fastrand::Rng::with_seed(u64::from(error_percent));
    let steps: Vec<Scripted> = (0..CALLS * 12)
        .map(|_| {
            if rng.u8(0..100) < error_percent {
                Scripted::http(503, "Service Unavailable")
            } else {
                Scripted::ok("fine")
            }
        })
        .collect();
    ScriptedProvider::new(steps).otherwise(Scripted::ok("fine"))
}

/// Requests per logical call, and how many calls were answered.
async fn run(error_percent: u8, quota: Option<RetryQuota>) -> (f64, usize) {
    let provider = provider(error_percent);
    let runtime = Runtime::builder(provider.clone()).with_retry_quota(quota).with_jitter_seed(7).build().unwrap();
    let calls: Vec<_> = (0..CALLS)
        .map(|index| {
            let runtime = runtime.clone();
            tokio::spawn(async move { runtime.exec(format!("call {index}")).await.is_ok() })
        })
        .collect();
    let mut ok = 0;
    for call in calls {
        ok += usize::from(call.await.unwrap_or(false));
    }
    (provider.calls() as f64 / CALLS as f64, ok)
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    println!("{CALLS} concurrent execs, default policy (up to 12 requests each)");
    println!("retry quota: RetryQuota::standard (one retry per success over a 60 s window, plus 100)\n");
    println!("{:<22} {:>26} {:>26}", "provider", "requests/call, budget", "requests/call, no budget");
    for (label, percent) in [("full outage", 100), ("30 % transient errors", 30), ("healthy", 0)] {
        let (with, ok_with) = run(percent, Some(RetryQuota::standard())).await;
        let (without, ok_without) = run(percent, None).await;
        println!("{label:<22} {with:>13.2} ({ok_with:>3} answered) {without:>13.2} ({ok_without:>3} answered)");
    }
}
