//! Layer 1 (`Conversation`): 4 calls with 2/4/8 s sleeps, the failed message popped, history intact.

use std::time::Duration;

use agentic_runtime::decision::Verdict;
use agentic_runtime::message::{Message, StopReason};
use agentic_runtime::policy::Jitter;
use agentic_runtime::{RetryPolicy, Runtime, Scripted, ScriptedProvider};
use tokio::time::Instant;

/// The defaults without jitter: pins the exact schedule.
fn exact() -> RetryPolicy {
    RetryPolicy::new().with_jitter(Jitter::None)
}

fn ms(list: &[u64]) -> Vec<Duration> {
    list.iter().map(|ms| Duration::from_millis(*ms)).collect()
}

#[tokio::test(start_paused = true)]
async fn retries_three_times_after_2_4_8_seconds() {
    let provider = ScriptedProvider::new(Scripted::error("overloaded").times(5));
    let runtime = Runtime::builder(provider.clone()).with_policy(exact()).build().unwrap();
    let mut session = runtime.conversation();
    let start = Instant::now();
    let last = session.run("hi").await.unwrap().clone();
    assert_eq!(provider.calls(), 4);
    assert_eq!(start.elapsed(), Duration::from_secs(14));
    assert_eq!(last.error_text(), "overloaded");
    // The last failure stays for layer 2 to see; the earlier ones were removed.
    assert_eq!(session.history().len(), 2);
    // Each retry saw the same prompt and no failed message.
    for request in provider.requests() {
        assert_eq!(request.messages, vec![Message::user("hi")]);
    }
}

#[tokio::test(start_paused = true)]
async fn the_sleeps_are_exactly_the_reference_schedule() {
    let provider =
        ScriptedProvider::new([Scripted::error(""), Scripted::error(""), Scripted::error(""), Scripted::ok("ok")]);
    let runtime = Runtime::new(provider.clone());
    let reply = runtime.request("hi").policy(&exact()).send().await.unwrap();
    let sleeps: Vec<Duration> = reply.decisions().iter().filter_map(|d| d.delay()).collect();
    assert_eq!(sleeps, ms(&[2000, 4000, 8000]));
    assert!(reply.decisions().iter().all(|d| d.verdict() == Verdict::Retry));
    assert_eq!(reply.calls(), 4);
    assert_eq!(reply.attempts(), 1);
    assert_eq!(reply.elapsed(), Duration::from_secs(14));
}

#[tokio::test(start_paused = true)]
async fn a_non_retryable_error_is_handed_to_layer_2_at_once() {
    let provider = ScriptedProvider::new([Scripted::error("something odd")]).otherwise(Scripted::ok("ok"));
    let runtime = Runtime::new(provider.clone());
    let mut session = runtime.conversation();
    let message = session.run("hi").await.unwrap();
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(provider.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn session_retries_zero_turns_layer_1_off() {
    let provider = ScriptedProvider::new(Scripted::error("overloaded").times(3));
    let policy = RetryPolicy::new().with_session_retries(0);
    let runtime = Runtime::new(provider.clone());
    let error = runtime.request("hi").policy(&policy).send().await.unwrap_err();
    assert_eq!(provider.calls(), 3);
    assert_eq!(error.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_conversation_keeps_earlier_turns_and_loses_only_failures() {
    let provider = ScriptedProvider::new([
        Scripted::ok("first answer"),
        Scripted::http(503, "unavailable"),
        Scripted::error(""),
        Scripted::ok("second answer"),
    ]);
    let runtime = Runtime::new(provider.clone());
    let mut session = runtime.conversation();
    session.run("one").await.unwrap();
    session.run("two").await.unwrap();
    let texts: Vec<String> = session.history().iter().map(Message::text).collect();
    assert_eq!(texts, ["one", "first answer", "two", "second answer"]);
    // The third call saw the history without the 503.
    assert_eq!(provider.requests()[2].messages.len(), 3);
}

/// Dropping the future in the middle of a backoff sleep leaves no failed message behind.
#[tokio::test(start_paused = true)]
async fn cancellation_leaves_no_failed_message() {
    let provider = ScriptedProvider::new([Scripted::error("overloaded")]).otherwise(Scripted::ok("late"));
    let runtime = Runtime::new(provider.clone());
    let mut session = runtime.conversation();
    let cancelled = tokio::time::timeout(Duration::from_millis(500), session.run("hi")).await;
    assert!(cancelled.is_err(), "the run was still sleeping and was dropped");
    assert_eq!(provider.calls(), 1);
    assert_eq!(session.history(), [Message::user("hi")]);
    assert!(session.history().iter().all(|m| m.as_assistant().is_none()));

    // Dropped while the model call itself is in flight: nothing is added either.
    let slow = ScriptedProvider::new([Scripted::ok("slow").with_latency(Duration::from_secs(5))]);
    let mut session = Runtime::new(slow).conversation();
    let cancelled = tokio::time::timeout(Duration::from_secs(1), session.run("hi")).await;
    assert!(cancelled.is_err());
    assert_eq!(session.history(), [Message::user("hi")]);
}

/// Any mix of failures and successes: the history holds the prompts and the final messages only,
/// and every request a retry sent equals the first request of its run. A seeded random property test.
#[tokio::test(start_paused = true)]
async fn history_is_intact_after_any_mix_of_failures() {
    let mut rng = fastrand::Rng::with_seed(0xA6E7);
    for _case in 0..200 {
        let steps: Vec<Scripted> = (0..rng.usize(1..12))
            .map(|_| match rng.u8(0..6) {
                0 => Scripted::ok("answer"),
                1 => Scripted::error(""),
                2 => Scripted::error("overloaded"),
                3 => Scripted::http(429, "slow down"),
                4 => Scripted::http(401, "invalid api key"),
                _ => Scripted::error("context_length_exceeded"),
            })
            .collect();
        let provider = ScriptedProvider::new(steps).otherwise(Scripted::ok("fallback"));
        let runtime = Runtime::new(provider.clone());
        let mut session = runtime.conversation();
        let turns = rng.usize(1..4);
        let mut requests_before = 0;
        for turn in 0..turns {
            let prompt = format!("prompt {turn}");
            let before: Vec<Message> = session.history().to_vec();
            let last = session.run(prompt.clone()).await.unwrap().clone();
            let history = session.history();
            assert_eq!(history.len(), before.len() + 2);
            assert_eq!(&history[..before.len()], &before[..]);
            assert_eq!(history[before.len()], Message::user(prompt));
            assert_eq!(history.last().unwrap().as_assistant(), Some(&last));
            let requests = provider.requests();
            let first = &requests[requests_before];
            for request in &requests[requests_before..] {
                assert_eq!(request.messages, first.messages);
            }
            assert_eq!(first.messages.len(), before.len() + 1);
            requests_before = requests.len();
        }
    }
}
