//! A runtime is built once: `build()` refuses what cannot work, a built runtime's clones share
//! everything it made, one request builder reaches every combination, and the attribute runs a
//! `request(..)` chain as the function.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentic_runtime::decision::Decision;
use agentic_runtime::decision::Verdict;
use agentic_runtime::exec::{MAX_TARGETS, RuntimeBuilder};
use agentic_runtime::policy::Jitter;
use agentic_runtime::provider::ResponseSchema;
use agentic_runtime::storm::{BreakerSettings, BreakerState, RetryQuota};
use agentic_runtime::{
    ExecError, ExecErrorKind, Reply, RetryPolicy, Runtime, Scripted, ScriptedProvider, Toolbox, agentic_function,
};
use serde_json::json;

fn scripted(model: &str) -> ScriptedProvider {
    ScriptedProvider::new([]).with_model(model).otherwise(Scripted::ok("fine"))
}

#[test]
fn build_refuses_a_33rd_target_naming_the_setting() {
    let builder = (1..MAX_TARGETS).fold(Runtime::builder(scripted("primary")), |builder, n| {
        builder.with_fallback(scripted(&format!("fallback-{n}")))
    });
    assert_eq!(builder.clone().build().unwrap().targets().len(), MAX_TARGETS);
    let error = builder.with_fallback(scripted("one-too-many")).build().unwrap_err();
    assert_eq!(error.key(), "with_fallback");
    assert!(error.message().starts_with("33 targets are too many: a runtime has at most 32"), "{error}");
}

#[test]
fn build_refuses_a_breaker_without_a_fallback_and_an_invalid_policy() {
    let error = Runtime::builder(scripted("a")).with_breaker(BreakerSettings::standard()).build().unwrap_err();
    assert_eq!(error.key(), "with_breaker");
    assert!(error.message().contains("add one with `with_fallback`"), "{error}");

    let error =
        Runtime::builder(scripted("a")).with_policy(RetryPolicy::new().with_max_retries(0)).build().unwrap_err();
    assert_eq!(error.key(), "max_retries");
    // As a function's error: `?` makes it a programming error of kind `programming`.
    let exec_error = ExecError::from(error);
    assert_eq!(exec_error.kind(), ExecErrorKind::Programming);
    assert_eq!(exec_error.exec_id(), None, "no exec started");
}

/// One call per exec, no layer-1 retry: each exec tries a target once.
fn one_call() -> RetryPolicy {
    RetryPolicy::new().with_jitter(Jitter::None).with_session_retries(0).with_max_retries(1)
}

#[tokio::test(start_paused = true)]
async fn a_clone_shares_the_breakers_and_the_retry_quota_of_the_runtime_it_was_cloned_from() {
    let primary = ScriptedProvider::new([]).with_model("a").otherwise(Scripted::http(503, "Service Unavailable"));
    let small = BreakerSettings::new(50, 4, Duration::from_secs(10), Duration::from_secs(30)).unwrap();
    let runtime = Runtime::builder(primary.clone())
        .with_fallback(scripted("b"))
        .with_breaker(small)
        .with_policy(one_call())
        .with_retry_quota(Some(RetryQuota::standard().with_min_retries(0)))
        .build()
        .unwrap();
    let clone = runtime.clone();
    for _ in 0..4 {
        clone.exec("through the clone").await.unwrap();
    }
    // The breaker the clone's failures opened is the original's.
    assert!(matches!(runtime.targets()[0].breaker, Some(BreakerState::Open { .. })), "{:?}", runtime.targets());
    assert_eq!(primary.calls(), 4);
    runtime.exec("skips the open primary").await.unwrap();
    assert_eq!(primary.calls(), 4, "the original skips the primary the clone's failures opened");
    // The successes the clone's execs paid in are the original's to spend.
    assert_eq!(runtime.targets()[1].retry_quota, clone.targets()[1].retry_quota);
    assert_eq!(runtime.targets()[1].retry_quota, Some(5));
}

#[tokio::test(start_paused = true)]
async fn a_request_combines_a_policy_tools_and_a_schema_and_says_its_facts() {
    let tools = Toolbox::new().with_fn("lookup", "Looks it up.", json!(null), |_| async { Ok("12.5".to_owned()) });
    let provider = ScriptedProvider::new([
        Scripted::tool_call("lookup", json!({})),
        Scripted::error("overloaded"),
        Scripted::ok(r#"{"total": 12.5}"#),
    ]);
    let runtime = Runtime::new(provider.clone());
    let schema = ResponseSchema::new("total", json!({"type": "object", "properties": {"total": {"type": "number"}}}));
    let typed = runtime
        .request("Add it up.")
        .policy(&RetryPolicy::new().with_jitter(Jitter::None).with_max_retries(1))
        .tools(&tools)
        .schema(schema, |answer| if answer["total"].is_number() { Ok(()) } else { Err("no total".to_owned()) })
        .typed::<serde_json::Value>()
        .await
        .unwrap();
    assert_eq!(typed.value()["total"], 12.5);
    assert_eq!((typed.calls(), typed.iterations()), (3, 1));
    let decision = &typed.decisions()[0];
    assert_eq!(decision.verdict(), Verdict::Retry);
    assert_eq!(decision.exec_id(), typed.exec_id());
    assert_eq!(decision.target(), None, "one target: no fallback to name");
    assert!(provider.requests()[0].tools.iter().any(|tool| tool == "lookup"));
}

/// Look it up.
#[agentic_function(max_retries = 1, session_retries = 0)]
async fn look_up(runtime: &Runtime, question: &str) -> Result<Reply, ExecError> {
    runtime.request(question).send().await
}

/// Look it up, patiently.
#[agentic_function(max_retries = 1, session_retries = 0)]
async fn look_up_patiently(runtime: &Runtime, question: &str) -> Result<Reply, ExecError> {
    runtime.request(question).policy(&RetryPolicy::new().with_jitter(Jitter::None).with_max_retries(2)).send().await
}

#[tokio::test(start_paused = true)]
async fn the_attribute_runs_a_request_chain_as_the_function_and_a_policy_of_its_own_wins() {
    let provider = ScriptedProvider::new([Scripted::error("overloaded"), Scripted::ok("found")]);
    let runtime = Runtime::new(provider.clone());
    let error = look_up(&runtime, "where?").await.unwrap_err();
    assert_eq!((error.kind(), error.calls(), error.function()), (ExecErrorKind::Exhausted, 1, Some("look_up")));
    assert_eq!(provider.requests()[0].system.as_deref(), Some("Look it up."));

    let provider = ScriptedProvider::new([Scripted::error("overloaded"), Scripted::ok("found")]);
    let runtime = Runtime::new(provider.clone());
    let reply = look_up_patiently(&runtime, "where?").await.unwrap();
    assert_eq!((reply.text(), reply.calls()), ("found", 2), "the request's two attempts, not the function's one");
    assert_eq!(reply.decisions()[0].function(), Some("look_up_patiently"));
    assert_eq!(provider.requests()[1].system.as_deref(), Some("Look it up, patiently."));
}

#[tokio::test(start_paused = true)]
async fn one_observer_tells_concurrent_execs_and_their_targets_apart() {
    // Each decision's exec and target, as the one observer heard them.
    type Heard = Arc<Mutex<Vec<(u64, Option<String>)>>>;
    let seen: Heard = Arc::default();
    let primary = ScriptedProvider::new([]).with_model("a").otherwise(Scripted::http(401, "invalid api key"));
    let runtime = RuntimeBuilder::from_shared(Arc::new(primary))
        .with_fallback(scripted("b"))
        .with_observer({
            let seen = seen.clone();
            move |decision: &Decision| {
                seen.lock().unwrap().push((decision.exec_id(), decision.target().map(str::to_owned)));
            }
        })
        .build()
        .unwrap();
    let (one, two) = tokio::join!(runtime.exec("one"), runtime.exec("two"));
    let (one, two) = (one.unwrap(), two.unwrap());
    assert_ne!(one.exec_id(), two.exec_id());
    let seen = seen.lock().unwrap().clone();
    for reply in [&one, &two] {
        let own: Vec<_> = seen.iter().filter(|(exec, _)| *exec == reply.exec_id()).collect();
        // Layer 1 gives up on the 401, then layer 2 moves on: both about the call to `scripted/a`.
        assert_eq!(own.len(), 2, "{seen:?}");
        assert!(own.iter().all(|(_, target)| target.as_deref() == Some("scripted/a")), "{seen:?}");
        assert_eq!(reply.target(), Some("scripted/b"));
    }
}
