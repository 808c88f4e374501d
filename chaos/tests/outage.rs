//! Scripted outages (`Scenario::with_outage`, `"outages"`): during a window of the scenario's clock
//! every model request gets the outage's step, in its wire's format, and consumes no step; before
//! and after, the steps answer as scripted. The journal marks the outage's answers; the JSON field
//! loads, round-trips and is checked.
//!
//! The clock is tokio's: every test runs on paused time and moves it with `tokio::time::advance`.
//! No step here sets a timer and the raw client sets none, so nothing else moves the clock and
//! every `at_ms` is exact.

use crate::common;

use std::time::Duration;

use agentic_chaos::{ChaosServer, MAX_OUTAGE_MS, MAX_OUTAGES, Outage, Scenario, ScenarioError, Step, StepKind};
use common::{Client, Outcome, Response, WireFormat};
use serde_json::Value;

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// One model request on a new connection, in `wire`'s format.
async fn ask(server: &ChaosServer, wire: WireFormat, stream: bool) -> Outcome {
    Client::connect(server.addr()).await.model(wire, stream).await
}

/// The text of a successful answer, streamed or not.
#[track_caller]
fn text(wire: WireFormat, stream: bool, outcome: Outcome) -> String {
    let response = outcome.response();
    assert_eq!(response.status, 200, "{wire:?} stream={stream}: {}", response.text());
    if stream { common::stream_text(wire, &response.events()).0 } else { common::whole_text(wire, &response.json()) }
}

/// What a server scripted with `step` alone answers in `wire`'s format: an outage's answer must
/// be the very same.
async fn answer_of(step: impl Into<Step>, wire: WireFormat, stream: bool) -> Response {
    let server = ChaosServer::start(Scenario::new().then(step)).await.unwrap();
    ask(&server, wire, stream).await.response()
}

/// A journal entry's step as (index, kind, repeat, outage), and its `outage` flag.
type Seen = ((Option<usize>, StepKind, u32, Option<usize>), bool);

/// Each journal entry's step and `outage` flag.
fn steps(server: &ChaosServer) -> Vec<Seen> {
    let journal = server.journal();
    journal.iter().map(|e| e.step.map(|s| ((s.index, s.kind, s.repeat, s.outage), e.outage)).unwrap()).collect()
}

fn at_ms(server: &ChaosServer) -> Vec<u64> {
    server.journal().iter().map(|e| e.at_ms).collect()
}

#[tokio::test(start_paused = true)]
async fn on_every_wire_the_outage_answers_its_window_and_consumes_no_step() {
    for wire in WireFormat::ALL {
        for stream in [true, false] {
            let scenario = Scenario::new()
                .then(Step::ok("One."))
                .then(Step::ok("Two."))
                .otherwise(Step::ok("After."))
                .with_outage(Outage::new(ms(1_000), ms(3_000)));
            let server = ChaosServer::start(scenario).await.unwrap();
            let down = answer_of(Step::http_error(503), wire, stream).await;

            assert_eq!(text(wire, stream, ask(&server, wire, stream).await), "One.", "{wire:?}: before the outage");
            tokio::time::advance(ms(1_000)).await;
            for _ in 0..2 {
                let r = ask(&server, wire, stream).await.response();
                assert_eq!(r.status, 503, "{wire:?} stream={stream}: from `from` on");
                assert_eq!(r.json(), down.json(), "{wire:?}: the provider's own 503 body");
            }
            tokio::time::advance(ms(1_999)).await;
            assert_eq!(ask(&server, wire, stream).await.response().status, 503, "{wire:?}: 1 ms before `until`");
            tokio::time::advance(ms(1)).await;
            let after = text(wire, stream, ask(&server, wire, stream).await);
            assert_eq!(after, "Two.", "{wire:?}: `until` is out of the window, and no step was consumed");
            assert_eq!(text(wire, stream, ask(&server, wire, stream).await), "After.", "{wire:?}");

            assert_eq!(at_ms(&server), [0, 1_000, 1_000, 2_999, 3_000, 3_000]);
            let outage = ((None, StepKind::HttpError, 0, Some(0)), true);
            assert_eq!(
                steps(&server),
                [
                    ((Some(0), StepKind::Ok, 1, None), false),
                    outage,
                    outage,
                    outage,
                    ((Some(1), StepKind::Ok, 1, None), false),
                    ((None, StepKind::Ok, 1, None), false),
                ],
                "{wire:?} stream={stream}"
            );
            let journal = server.journal();
            let marked = journal[1].step.unwrap();
            assert!(marked.is_outage() && !marked.is_default() && !marked.is_context_window());
            assert!(journal[5].step.unwrap().is_default() && !journal[5].step.unwrap().is_outage());
        }
    }
}

#[tokio::test(start_paused = true)]
async fn two_windows_answer_with_their_own_steps_between_the_scripted_ones() {
    let limited = Step::http_error(429).retry_after_secs(1);
    for wire in WireFormat::ALL {
        let scenario = Scenario::new()
            .then(Step::ok("A."))
            .then(Step::ok("B."))
            .with_outage(Outage::new(Duration::ZERO, ms(1_000)))
            .with_outage(Outage::new(ms(2_000), ms(2_500)).with_step(limited.clone()));
        let server = ChaosServer::start(scenario).await.unwrap();

        assert_eq!(ask(&server, wire, false).await.response().status, 503, "{wire:?}: down from the start");
        tokio::time::advance(ms(1_000)).await;
        assert_eq!(text(wire, false, ask(&server, wire, false).await), "A.");
        tokio::time::advance(ms(1_000)).await;
        let r = ask(&server, wire, false).await.response();
        let expected = answer_of(limited.clone(), wire, false).await;
        assert_eq!((r.status, r.header("retry-after")), (429, Some("1")), "{wire:?}: the second window's step");
        assert_eq!(r.json(), expected.json(), "{wire:?}: the 429 in the wire's own error format");
        tokio::time::advance(ms(500)).await;
        assert_eq!(text(wire, false, ask(&server, wire, false).await), "B.");

        assert_eq!(at_ms(&server), [0, 1_000, 2_000, 2_500]);
        assert_eq!(
            steps(&server),
            [
                ((None, StepKind::HttpError, 0, Some(0)), true),
                ((Some(0), StepKind::Ok, 1, None), false),
                ((None, StepKind::HttpError, 0, Some(1)), true),
                ((Some(1), StepKind::Ok, 1, None), false),
            ],
            "{wire:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn any_step_can_answer_an_outage_even_a_closed_socket() {
    for wire in WireFormat::ALL {
        let outage = Outage::new(Duration::ZERO, ms(10)).with_step(Step::CloseBeforeHeaders);
        let server = ChaosServer::start(Scenario::new().then(Step::ok("Back.")).with_outage(outage)).await.unwrap();
        assert!(matches!(ask(&server, wire, true).await, Outcome::ClosedBeforeHeaders), "{wire:?}");
        tokio::time::advance(ms(10)).await;
        assert_eq!(text(wire, true, ask(&server, wire, true).await), "Back.", "{wire:?}");
        assert_eq!(steps(&server)[0], ((None, StepKind::CloseBeforeHeaders, 0, Some(0)), true));
    }
}

#[tokio::test(start_paused = true)]
async fn an_outage_answers_before_the_context_window_and_only_model_requests() {
    let scenario = Scenario::new().with_context_window(1).with_outage(Outage::new(Duration::ZERO, ms(100)));
    let server = ChaosServer::start(scenario).await.unwrap();
    // "hi" is 2 bytes, over the window of 1: the server is down before it reads the conversation.
    assert_eq!(ask(&server, WireFormat::Anthropic, false).await.response().status, 503);
    let mut client = Client::connect(server.addr()).await;
    let get = client.request("GET", WireFormat::Anthropic.path(), &[], "").await.response();
    assert_eq!(get.status, 405, "a GET to a model endpoint is no model request");
    tokio::time::advance(ms(100)).await;
    assert_eq!(ask(&server, WireFormat::Anthropic, false).await.response().status, 400, "the window again");

    let journal = server.journal();
    let flags: Vec<_> = journal.iter().map(|e| (e.outage, e.over_window)).collect();
    assert_eq!(flags, [(true, false), (false, false), (false, true)]);
    assert_eq!(journal[1].step, None);
}

#[tokio::test(start_paused = true)]
async fn the_journal_over_http_marks_outage_answers() {
    let server = ChaosServer::start(Scenario::new().with_outage(Outage::new(ms(5), ms(6)))).await.unwrap();
    ask(&server, WireFormat::OpenAi, false).await.response();
    tokio::time::advance(ms(5)).await;
    ask(&server, WireFormat::OpenAi, false).await.response();
    let mut client = Client::connect(server.addr()).await;
    let journal = client.request("GET", "/_chaos/journal", &[], "").await.response().json();
    assert_eq!(journal[0]["outage"], false);
    assert_eq!(journal[0]["step"], serde_json::json!({"index": null, "kind": "ok", "repeat": 1}), "no `outage` key");
    assert_eq!(journal[1]["outage"], true);
    assert_eq!(journal[1]["at_ms"], 5);
    let step = serde_json::json!({"index": null, "kind": "http_error", "repeat": 0, "outage": 0});
    assert_eq!(journal[1]["step"], step);
    let back: Vec<agentic_chaos::JournalEntry> = serde_json::from_value(journal).unwrap();
    assert_eq!(back, server.journal(), "the JSON reads back");
}

#[tokio::test(start_paused = true)]
async fn a_reset_starts_the_outage_clock_again() {
    let server = ChaosServer::start(Scenario::new().with_outage(Outage::new(Duration::ZERO, ms(1_000)))).await.unwrap();
    tokio::time::advance(ms(1_500)).await;
    assert_eq!(ask(&server, WireFormat::OpenAi, false).await.response().status, 200, "past the outage");
    server.reset();
    assert_eq!(ask(&server, WireFormat::OpenAi, false).await.response().status, 503, "down again after a reset");
    tokio::time::advance(ms(1_000)).await;
    let later = Scenario::new().with_outage(Outage::new(ms(200), ms(300)));
    let mut client = Client::connect(server.addr()).await;
    let reset = client.request("POST", "/_chaos/reset", &[], &later.to_json()).await.response();
    assert_eq!(reset.status, 200);
    assert_eq!(ask(&server, WireFormat::OpenAi, false).await.response().status, 200, "the new scenario at 0 ms");
    tokio::time::advance(ms(200)).await;
    assert_eq!(ask(&server, WireFormat::OpenAi, false).await.response().status, 503, "its outage at 200 ms");
    assert_eq!(at_ms(&server), [0, 200]);
}

#[tokio::test(start_paused = true)]
async fn a_real_client_with_a_timeout_sees_the_outage_by_the_clock_the_test_moves() {
    // The client holds a timer (a 30 s timeout). On paused time tokio jumps to the next timer
    // only on a turn that wakes no task, and over loopback a request and its answer always have
    // bytes in flight: the clock moves only when the test says so.
    let client = agentic_test_support::http::client_builder().timeout(Duration::from_secs(30)).build().unwrap();
    for wire in WireFormat::ALL {
        let scenario = Scenario::new().with_outage(Outage::new(ms(1_000), ms(2_000)));
        let server = ChaosServer::start(scenario).await.unwrap();
        let url = format!("http://{}{}", server.addr(), wire.request_path("test-model", false));
        let mut statuses = Vec::new();
        for at in [0, 0, 1_000, 0, 1_000, 0] {
            tokio::time::advance(ms(at)).await;
            let sent = client.post(&url).header("content-type", "application/json").body(common::body(false));
            statuses.push(sent.send().await.unwrap().status().as_u16());
        }
        assert_eq!(statuses, [200, 200, 503, 503, 200, 200], "{wire:?}");
        assert_eq!(at_ms(&server), [0, 0, 1_000, 1_000, 2_000, 2_000], "{wire:?}");
    }
}

// The JSON form.

const FILE: &str = r#"{
  "outages": [
    {"from_ms": 1000, "until_ms": 3000},
    {"until_ms": 500, "step": {"kind": "http_error", "status": 429, "retry_after": 2}}
  ],
  "steps": [{"kind": "ok", "text": "Recovered."}]
}"#;

#[test]
fn a_file_with_outages_loads() {
    let path = std::env::temp_dir().join(format!("agentic-chaos-outage-{}.json", std::process::id()));
    std::fs::write(&path, FILE).unwrap();
    let loaded = Scenario::load(&path);
    std::fs::remove_file(&path).unwrap();
    let scenario = loaded.unwrap();
    let expected = Scenario::new()
        .then(Step::ok("Recovered."))
        .with_outage(Outage::new(ms(1_000), ms(3_000)))
        .with_outage(Outage::new(Duration::ZERO, ms(500)).with_step(Step::http_error(429).retry_after_secs(2)));
    assert_eq!(scenario, expected);
    assert_eq!(scenario.outages()[0].step(), &Step::from(Step::http_error(503)), "a 503 without a `step`");
    assert_eq!((scenario.outages()[1].from(), scenario.outages()[1].until()), (Duration::ZERO, ms(500)));
}

#[test]
fn outages_round_trip_through_json_and_the_default_step_is_left_out() {
    let scenario = Scenario::from_json_str(FILE).unwrap();
    let json: Value = serde_json::from_str(&scenario.to_json()).unwrap();
    let outages = serde_json::json!([
        {"from_ms": 1000, "until_ms": 3000},
        {"from_ms": 0, "until_ms": 500, "step": {"kind": "http_error", "status": 429, "retry_after": 2}},
    ]);
    assert_eq!(json["outages"], outages);
    assert_eq!(Scenario::from_json_str(&scenario.to_json()).unwrap(), scenario);
    let plain: Value = serde_json::from_str(&Scenario::new().to_json()).unwrap();
    assert_eq!(plain.get("outages"), None, "no `outages` key without outages");
}

#[test]
fn bad_outage_fields_are_refused_with_the_field_named() {
    let many = format!(r#"{{"outages": [{}]}}"#, vec![r#"{"until_ms": 1}"#; MAX_OUTAGES + 1].join(", "));
    let over_a_day = format!(r#"{{"outages": [{{"until_ms": {}}}]}}"#, MAX_OUTAGE_MS + 1);
    let start_over_a_day = format!(r#"{{"outages": [{{"from_ms": {}, "until_ms": 1}}]}}"#, MAX_OUTAGE_MS + 1);
    let cases: Vec<(&str, &str, &str)> = vec![
        (r#"{"outages": [{"from_ms": 0, "untill_ms": 5}]}"#, "outages[0].untill_ms", "did you mean `until_ms`?"),
        (r#"{"outages": [{"from_ms": 0}]}"#, "outages[0]", "missing field `until_ms`"),
        (r#"{"outages": [{"until_ms": -1}]}"#, "outages[0].until_ms", "invalid value"),
        (r#"{"outages": {"until_ms": 5}}"#, "outages", "expected a sequence"),
        (r#"{"outages": [{"from_ms": 5, "until_ms": 5}]}"#, "outages[0].until_ms", "must be after `from_ms` (5)"),
        (
            r#"{"outages": [{"until_ms": 9}, {"from_ms": 7, "until_ms": 3}]}"#,
            "outages[1].until_ms",
            "(3) must be after",
        ),
        (&over_a_day, "outages[0].until_ms", "at most 86400000 (a day"),
        (&start_over_a_day, "outages[0].from_ms", "at most 86400000"),
        (&many, "outages", "at most 64 outages, not 65"),
        (
            r#"{"outages": [{"until_ms": 5, "step": {"kind": "http_error", "staus": 503}}]}"#,
            "outages[0].step.staus",
            "did you mean `status`?",
        ),
        (
            r#"{"outages": [{"until_ms": 5, "step": {"kind": "http_error"}}]}"#,
            "outages[0].step.status",
            "needs a `status`",
        ),
        (
            r#"{"outages": [{"until_ms": 5, "step": {"kind": "ok", "times": 2}}]}"#,
            "outages[0].step.times",
            "takes no `times`",
        ),
    ];
    for (json, field, message) in cases {
        let err = Scenario::from_json_str(json).unwrap_err();
        assert!(matches!(err, ScenarioError::Invalid { .. }), "{json}");
        assert_eq!(err.field(), Some(field), "{json}: {err}");
        assert!(err.to_string().contains(message), "{json}: {err}");
    }
}

#[test]
fn a_bad_outage_in_a_file_names_the_file_and_the_field() {
    let path = std::env::temp_dir().join(format!("agentic-chaos-bad-outage-{}.json", std::process::id()));
    std::fs::write(&path, r#"{"outages": [{"from_ms": 3000, "until_ms": 1000}]}"#).unwrap();
    let err = Scenario::load(&path).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(err.file(), Some(path.as_path()));
    let text = err.to_string();
    assert!(text.starts_with(&format!("scenario file `{}`, `outages[0].until_ms`: ", path.display())), "{text}");
}

#[test]
#[should_panic(expected = "at most 64 outages")]
fn a_scenario_built_in_rust_holds_at_most_64_outages_too() {
    let mut scenario = Scenario::new();
    for i in 0..=MAX_OUTAGES as u64 {
        scenario = scenario.with_outage(Outage::new(ms(i), ms(i + 1)));
    }
}
