//! Storm control: the retry quota (successes pay for retries over a sliding window) and the shared
//! cooldown, on paused time.

use std::time::Duration;

use agentic_runtime::decision::Verdict;
use agentic_runtime::exec::Conversation;
use agentic_runtime::policy::Jitter;
use agentic_runtime::storm::RetryQuota;
use agentic_runtime::{ExecErrorKind, RetryPolicy, Runtime, Scripted, ScriptedProvider};

/// Runs `count` concurrent execs and returns (requests made, successes).
async fn storm(runtime: &Runtime, provider: &ScriptedProvider, count: usize) -> (usize, usize) {
    let before = provider.calls();
    let calls: Vec<_> = (0..count)
        .map(|index| {
            let runtime = runtime.clone();
            tokio::spawn(async move { runtime.exec(format!("call {index}")).await })
        })
        .collect();
    let mut ok = 0;
    for call in calls {
        if call.await.unwrap().is_ok() {
            ok += 1;
        }
    }
    (provider.calls() - before, ok)
}

/// The standard floor: 100 retries in any window (60 s).
const FLOOR: usize = 100;

/// The standard window.
const WINDOW: Duration = Duration::from_secs(60);

/// A runtime on `provider` whose delays are exact (no jitter): 2 s, 4 s, 8 s in layer 1.
fn exact(provider: &ScriptedProvider) -> Runtime {
    exact_with(provider, Some(RetryQuota::standard()))
}

/// [`exact`] with `quota`.
fn exact_with(provider: &ScriptedProvider, quota: Option<RetryQuota>) -> Runtime {
    Runtime::builder(provider.clone())
        .with_policy(RetryPolicy::new().with_jitter(Jitter::None))
        .with_retry_quota(quota)
        .build()
        .unwrap()
}

fn outage() -> ScriptedProvider {
    ScriptedProvider::new([]).otherwise(Scripted::http(503, "Service Unavailable"))
}

/// `calls` steps that fail with `percent` % probability (a seeded sequence).
fn wobble_steps(percent: u8, calls: usize) -> Vec<Scripted> {
    let mut rng = fastrand::Rng::with_seed(u64::from(percent));
    (0..calls)
        .map(
            |_| {
                if rng.u8(0..100) < percent { Scripted::http(503, "Service Unavailable") } else { Scripted::ok("fine") }
            },
        )
        .collect()
}

/// A provider in a wobble of `percent` % errors for `calls` calls, then healthy.
fn wobble(percent: u8, calls: usize) -> ScriptedProvider {
    ScriptedProvider::new(wobble_steps(percent, calls)).otherwise(Scripted::ok("fine"))
}

/// 200 concurrent execs during a full outage: nothing succeeds, so only the floor's 100 retries
/// are sent (without the budget each exec would make 12 requests), and every other retry is refused
/// with a message that says why. Further calls in the same window make one request each.
#[tokio::test(start_paused = true)]
async fn an_outage_gets_the_floor_and_then_one_request_per_call() {
    let provider = outage();
    let runtime = exact(&provider);
    assert_eq!(runtime.retry_quota_left(), Some(FLOOR as u64));
    let (requests, ok) = storm(&runtime, &provider, 200).await;
    assert_eq!(ok, 0);
    assert_eq!(requests, 200 + FLOOR, "200 first attempts and the floor's retries");
    assert_eq!(runtime.retry_quota_left(), Some(0));

    let error = runtime.exec("one more").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert_eq!(error.calls(), 1);
    let why = error.stopped_by().unwrap();
    assert_eq!(
        why,
        "the retry quota is empty: 100 retries against 0 successful calls in the last 60 s (the Runtime's retry \
         quota allows 100 retries per 100 successes, plus 100 in any 60 s); it refills as calls succeed"
    );
    // The quota was spent when the retry was judged: refused then, by both layers, with no sleep.
    let verdicts: Vec<Verdict> = error.decisions().iter().map(|decision| decision.verdict()).collect();
    assert_eq!(verdicts, [Verdict::Refused, Verdict::Refused]);
    assert_eq!(error.elapsed(), Duration::ZERO, "refused before the backoff it would have slept in vain");

    let (requests, _) = storm(&runtime, &provider, 200).await;
    assert_eq!(requests, 200, "the window's floor is spent: one request per call");
}

/// 30 % of calls fail transiently: the successes pay for every retry, so every logical call is
/// answered, with the amplification the layers make on their own (about 1.43).
#[tokio::test(start_paused = true)]
async fn a_30_percent_wobble_retries_every_call_that_fails() {
    let provider = wobble(30, 20_000);
    let runtime = Runtime::builder(provider.clone()).with_jitter_seed(30).build().unwrap();
    let (requests, ok) = storm(&runtime, &provider, 1_000).await;
    assert_eq!(ok, 1_000, "every call answered");
    let amplification = requests as f64 / 1_000.0;
    assert!((1.3..1.5).contains(&amplification), "{amplification}");
}

/// An outage that ends: retries resume at once when calls succeed again (their successes pay for
/// them), and without any success within one window (the outage's retries are forgotten).
#[tokio::test(start_paused = true)]
async fn after_an_outage_retries_resume_with_successes_or_within_one_window() {
    let provider = outage();
    let runtime = exact(&provider);
    let (requests, _) = storm(&runtime, &provider, 200).await;
    assert_eq!(requests, 300);
    assert_eq!(runtime.retry_quota_left(), Some(0));

    // Still failing one window later: the floor is back, a lone call gets all its retries.
    tokio::time::sleep(WINDOW).await;
    assert_eq!(runtime.retry_quota_left(), Some(FLOOR as u64));
    let error = runtime.exec("alone").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Exhausted);
    assert_eq!(error.calls(), 12, "every retry of the policy");

    // Spend the floor again, then the provider recovers to a 30 % wobble.
    let (_, ok) = storm(&runtime, &provider, 200).await;
    assert_eq!((ok, runtime.retry_quota_left()), (0, Some(0)));
    provider.push(wobble_steps(30, 2_000));
    let (_, ok) = storm(&runtime, &provider, 200).await;
    assert_eq!(ok, 200, "the recovered provider's successes pay for the retries at once");
}

/// A retry the quota refuses now is refused at once: no "retry" decision, no backoff. One it allows
/// now is charged when it is about to be sent, after its backoff, so that a retry it can no longer
/// pay for then is refused after the wait, as a decision that follows the "retry".
#[tokio::test(start_paused = true)]
async fn a_retry_the_quota_refuses_now_is_refused_before_its_backoff() {
    let quota = RetryQuota::standard().with_min_retries(0);
    // No success yet: nothing pays for a retry, and the exec stops at once.
    let provider = ScriptedProvider::new([Scripted::error("overloaded")]).otherwise(Scripted::ok("fine"));
    let runtime = exact_with(&provider, Some(quota));
    let error = runtime.exec("fails first").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert_eq!(error.elapsed(), Duration::ZERO, "no backoff slept");
    assert!(error.stopped_by().unwrap().contains("0 retries against 0 successful calls"));
    assert!(error.decisions().iter().all(|decision| decision.verdict() != Verdict::Retry), "{:?}", error.decisions());

    // One success pays for one retry: two execs that fail together both decide to retry, and the
    // second to be sent finds the retry spent already, after its wait (the first retry's answer
    // takes a second, so it pays for nothing yet).
    let provider =
        ScriptedProvider::new([Scripted::ok("fine"), Scripted::error("overloaded"), Scripted::error("overloaded")])
            .otherwise(Scripted::ok("fine").with_latency(Duration::from_secs(1)));
    let runtime = exact_with(&provider, Some(quota));
    runtime.exec("answers").await.unwrap();
    let (first, second) = tokio::join!(runtime.exec("one"), runtime.exec("two"));
    let (answered, refused) = match (first, second) {
        (Ok(reply), Err(error)) | (Err(error), Ok(reply)) => (reply, error),
        other => panic!("one retry was paid for: {other:?}"),
    };
    assert_eq!(answered.calls(), 2);
    assert_eq!(refused.elapsed(), Duration::from_secs(2), "refused after its wait");
    let verdicts: Vec<Verdict> = refused.decisions().iter().map(|decision| decision.verdict()).collect();
    // Layer 1 decided to retry, and then both layers record the refusal after the wait.
    assert_eq!(verdicts, [Verdict::Retry, Verdict::Refused, Verdict::Refused]);
}

/// Successes older than the window are forgotten, slot by slot, once a retry has placed them (a
/// reading places nothing: `reading_the_retry_quota_does_not_change_it`).
#[tokio::test(start_paused = true)]
async fn successes_pay_only_while_they_are_in_the_window() {
    let mut steps = vec![Scripted::ok("fine"); 50];
    steps.extend([Scripted::http(503, "Service Unavailable"), Scripted::ok("fine")]);
    let provider = ScriptedProvider::new(steps);
    let runtime = exact_with(&provider, Some(RetryQuota::standard().with_min_retries(0)));
    for _ in 0..50 {
        runtime.exec("hi").await.unwrap();
    }
    assert_eq!(runtime.retry_quota_left(), Some(50));
    // The retry, 2 s later, places the 50 successes in slot 0; its own call's success is the 51st.
    runtime.exec("retried").await.unwrap();
    assert_eq!(runtime.retry_quota_left(), Some(50), "51 successes, 1 retry");
    // Slots of a tenth of the window: the successes of slot 0 count until the window has passed.
    tokio::time::sleep(WINDOW - Duration::from_secs(3)).await;
    assert_eq!(runtime.retry_quota_left(), Some(50));
    tokio::time::sleep(Duration::from_secs(1)).await;
    // Slot 0 (its 50 successes and the retry) is forgotten; what is left is at most the success
    // counted since the retry, still unplaced, spread over the time since it.
    assert!(runtime.retry_quota_left() <= Some(1), "{:?}", runtime.retry_quota_left());
}

/// Every call the provider answers pays for retries: an exec's answer, a session's answer, and an
/// answer the validator rejected (the provider was fine; the answer was not).
#[tokio::test(start_paused = true)]
async fn every_call_the_provider_answers_pays() {
    let provider = ScriptedProvider::new([Scripted::ok("fine"), Scripted::ok("not a number"), Scripted::ok("7")]);
    let runtime = exact_with(&provider, Some(RetryQuota::standard().with_min_retries(0)));
    let mut session = Conversation::new(runtime.clone());
    session.run("hi").await.unwrap();
    assert_eq!(runtime.retry_quota_left(), Some(1), "the session's answer");
    assert_eq!(runtime.exec_json::<u32>("a number").await.unwrap(), 7);
    assert_eq!(provider.calls(), 3);
    assert_eq!(runtime.retry_quota_left(), Some(2), "3 answers, one of them rejected, paid for the one retry");
}

#[tokio::test(start_paused = true)]
async fn the_off_switch_keeps_the_reference_behaviour() {
    let provider = outage();
    let runtime = Runtime::builder(provider.clone()).with_retry_quota(None).build().unwrap();
    let (requests, ok) = storm(&runtime, &provider, 50).await;
    assert_eq!((requests, ok), (600, 0), "12 requests per logical call without the budget");
    assert_eq!(runtime.retry_quota_left(), None);
}

/// One call learns "wait 20 s"; the others wait until then before their next request instead of
/// each discovering the 429.
#[tokio::test(start_paused = true)]
async fn a_cooldown_set_by_one_call_delays_the_others() {
    let provider = ScriptedProvider::new([Scripted::http(429, "slow down").with_retry_after(Duration::from_secs(20))])
        .otherwise(Scripted::ok("fine").with_latency(Duration::from_millis(1)));
    let runtime = Runtime::new(provider.clone());
    let first = tokio::spawn({
        let runtime = runtime.clone();
        async move { runtime.exec("first").await }
    });
    // Let the first call fail and set the cooldown.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let start = tokio::time::Instant::now();
    let second = runtime.exec("second").await.unwrap();
    assert_eq!(second.calls(), 1, "the second call never saw the 429");
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(19_990) && waited <= Duration::from_millis(20_010), "{waited:?}");
    assert_eq!(first.await.unwrap().unwrap().calls(), 2);
    assert_eq!(provider.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_cooldown_past_the_callers_cap_is_refused_not_waited_in_part() {
    let provider = ScriptedProvider::new([Scripted::http(429, "slow down").with_retry_after(Duration::from_secs(50))])
        .otherwise(Scripted::ok("fine"));
    let runtime = Runtime::new(provider.clone());
    let _ =
        runtime.request("first").policy(&RetryPolicy::new().with_max_retries(1).with_session_retries(0)).send().await;
    let start = tokio::time::Instant::now();
    let capped = RetryPolicy::new().with_retry_after_cap_ms(5_000);
    let error = runtime.request("second").policy(&capped).send().await.unwrap_err();
    assert_eq!((error.calls(), start.elapsed()), (0, Duration::ZERO), "no request before the server's time");
    assert_eq!(provider.calls(), 1);
}

#[test]
fn http_providers_are_scoped_by_a_fingerprint_of_url_and_key_never_the_key() {
    use agentic_runtime::provider::{AnthropicProvider, OpenAiProvider, Provider};
    let key = "sk-canary-SECRET-scope";
    let a = OpenAiProvider::new("https://api.openai.com/v1", Some(key.to_owned()));
    let b = OpenAiProvider::new("https://api.openai.com/v1/", Some(key.to_owned())).with_model("other");
    let other_key = OpenAiProvider::new("https://api.openai.com/v1", Some("sk-another".to_owned()));
    let other_host = OpenAiProvider::new("http://127.0.0.1:8080/v1", Some(key.to_owned()));
    assert_eq!(a.scope(), b.scope(), "same endpoint and key, same bucket");
    assert_ne!(a.scope(), other_key.scope());
    assert_ne!(a.scope(), other_host.scope());
    assert!(a.scope().starts_with("openai:") && a.scope().len() == "openai:".len() + 16, "{}", a.scope());
    assert!(!a.scope().contains("canary"));
    let anthropic = AnthropicProvider::new("https://api.anthropic.com", Some(key.to_owned()));
    assert!(anthropic.scope().starts_with("anthropic:"));
    assert_eq!(ScriptedProvider::new([]).scope(), "scripted");
}

/// Reading the retry quota changes nothing: two runtimes with the same history, idle
/// for 600 s, then answering 1 000 calls and retrying one failure, end with the same budget, though
/// one of them was read every second of its calm and just before its burst. Before, a reading
/// placed the successes counted since the previous one: the runtime read just before its burst
/// ended with 1 100 retries allowed, the one never read with 200.
#[tokio::test(start_paused = true)]
async fn reading_the_retry_quota_does_not_change_it() {
    let history = || {
        let mut steps = vec![Scripted::ok("fine"); 1_000];
        steps.extend([Scripted::http(503, "Service Unavailable"), Scripted::ok("fine")]);
        ScriptedProvider::new(steps)
    };
    let (read, unread) = (history(), history());
    let (watched, alone) = (exact(&read), exact(&unread));
    let mut readings = Vec::new();
    for _ in 0..600 {
        tokio::time::advance(Duration::from_secs(1)).await;
        readings.push(watched.retry_quota_left());
    }
    assert!(readings.iter().all(|reading| *reading == Some(FLOOR as u64)), "nothing succeeded yet");
    // The same calls at the same instants.
    let burst = |runtime: Runtime| async move {
        for _ in 0..1_000 {
            runtime.exec("call").await.unwrap();
        }
        // One failure, retried: the retry is the one event that places the window's successes.
        runtime.exec("retried").await.unwrap();
    };
    futures_util::future::join(burst(watched.clone()), burst(alone.clone())).await;
    assert_eq!((read.calls(), unread.calls()), (1_002, 1_002));
    assert_eq!(watched.retry_quota_left(), alone.retry_quota_left());
    // At the retry (602 s) the 1 000 successes are spread over the 602 s since the runtime was
    // built: 99.67 of them fall in the last 60 s; with the retried call's own success and the floor,
    // 200 retries are allowed, one of them spent.
    assert_eq!(alone.retry_quota_left(), Some(199));
    tokio::time::advance(Duration::from_secs(30)).await;
    assert_eq!(watched.retry_quota_left(), alone.retry_quota_left());
}
