//! Repeat counts, the default step, the journal (API and HTTP), and scenario files.

use crate::common;

use agentic_test_support::temp_file::TempFile;

use agentic_chaos::{
    ChaosServer, EchoKey, JournalEntry, MAX_CHUNKS, MAX_TEXT_BYTES, MAX_TOOL_CALLS, Scenario, ScenarioError, Step,
    StepKind,
};
use common::{Client, End, WireFormat, model};

#[tokio::test]
async fn steps_repeat_then_the_default_answers() {
    let scenario =
        Scenario::new().then_times(2, Step::http_error(503)).then(Step::drop_stream(1)).otherwise(Step::ok("fine"));
    let server = ChaosServer::start(scenario).await.unwrap();
    let mut statuses = Vec::new();
    for i in 0..5 {
        let wire = if i % 2 == 0 { WireFormat::OpenAi } else { WireFormat::Anthropic };
        let r = model(server.addr(), wire, true).await.response();
        statuses.push((r.status, r.end));
    }
    assert_eq!(statuses, [(503, End::Clean), (503, End::Clean), (200, End::Cut), (200, End::Clean), (200, End::Clean)]);
    let steps: Vec<_> = server
        .journal()
        .iter()
        .map(|e| {
            let s = e.step.unwrap();
            (s.index, s.kind, s.repeat)
        })
        .collect();
    assert_eq!(
        steps,
        [
            (Some(0), StepKind::HttpError, 1),
            (Some(0), StepKind::HttpError, 2),
            (Some(1), StepKind::DropStream, 1),
            (None, StepKind::Ok, 1),
            (None, StepKind::Ok, 2),
        ]
    );
    assert!(server.journal()[4].step.unwrap().is_default());
}

#[tokio::test]
async fn an_empty_scenario_always_succeeds() {
    let server = ChaosServer::start(Scenario::new()).await.unwrap();
    for wire in common::WireFormat::ALL {
        let r = model(server.addr(), wire, true).await.response();
        assert_eq!(common::stream_text(wire, &r.events()), (agentic_chaos::DEFAULT_TEXT.to_owned(), true));
    }
}

#[tokio::test]
async fn the_journal_records_each_request_without_the_key() {
    let server = ChaosServer::start(Scenario::new().then(Step::http_error(429))).await.unwrap();
    let canary = "sk-canary-0123456789";
    let mut client = Client::connect(server.addr()).await;
    let body = common::body(true);
    let bearer = format!("Bearer {canary}");
    client
        .request(
            "POST",
            "/v1/chat/completions?api-version=1",
            &[("authorization", &bearer), ("x-agentic-call", "1")],
            &body,
        )
        .await
        .response();
    client
        .request("POST", "/v1/messages", &[("x-api-key", canary), ("x-agentic-call", "2")], &common::body(false))
        .await
        .response();
    client.request("POST", "/v1/messages", &[], "not json").await.response();

    let journal = server.journal();
    assert_eq!(journal.len(), 3);
    assert_eq!(server.requests_served(), 3);
    let first = &journal[0];
    assert_eq!(first.seq, 0);
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/v1/chat/completions");
    assert_eq!(first.wire, Some(WireFormat::OpenAi));
    assert_eq!(first.stream, Some(true));
    assert_eq!(first.model.as_deref(), Some("test-model"));
    assert_eq!(first.agentic_call.as_deref(), Some("1"));
    assert!(first.auth);
    let second = &journal[1];
    assert_eq!(second.wire, Some(WireFormat::Anthropic));
    assert_eq!(second.stream, Some(false));
    assert_eq!(second.agentic_call.as_deref(), Some("2"));
    assert!(second.auth);
    assert_eq!(second.step.unwrap().kind, StepKind::Ok);
    let third = &journal[2];
    assert!(!third.auth);
    assert_eq!((third.stream, third.model.as_deref()), (Some(false), None));
    assert_eq!(third.agentic_call, None);
    assert!(journal.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));

    let dump = format!("{journal:?}{}", serde_json::to_string(&journal).unwrap());
    assert!(!dump.contains("canary"), "the key must never be journaled");
}

#[tokio::test]
async fn the_journal_is_served_over_http_and_reset_starts_over() {
    let server = ChaosServer::start(Scenario::new().then(Step::http_error(500))).await.unwrap();
    let mut client = Client::connect(server.addr()).await;
    assert_eq!(client.model(WireFormat::OpenAi, true).await.response().status, 500);
    assert_eq!(client.model(WireFormat::OpenAi, true).await.response().status, 200);
    let r = client.request("GET", "/_chaos/journal", &[], "").await.response();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let over_http: Vec<JournalEntry> = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(over_http, server.journal());
    assert_eq!(over_http.len(), 2, "control requests are not journaled");
    let raw = r.json();
    assert_eq!(raw[0]["wire"], "openai");
    assert_eq!(raw[0]["step"]["kind"], "http_error");
    assert_eq!(raw[0]["step"]["index"], 0);
    assert_eq!(raw[1]["step"]["index"], serde_json::Value::Null);

    // Reset over HTTP: the scenario starts over, the journal is empty.
    let r = client.request("POST", "/_chaos/reset", &[], "").await.response();
    assert_eq!(r.status, 200);
    assert_eq!(server.requests_served(), 0);
    assert_eq!(client.model(WireFormat::Anthropic, true).await.response().status, 500);

    // Reset with a new scenario.
    let new = r#"{"steps": [{"kind": "http_error", "status": 418}]}"#;
    let r = client.request("POST", "/_chaos/reset", &[], new).await.response();
    assert_eq!(r.status, 200);
    assert_eq!(client.model(WireFormat::OpenAi, false).await.response().status, 418);

    // A bad scenario is refused with the reason, and changes nothing.
    let bad = r#"{"steps": [{"kind": "http_error", "stauts": 418}]}"#;
    let r = client.request("POST", "/_chaos/reset", &[], bad).await.response();
    assert_eq!(r.status, 400);
    let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("steps[0].stauts"), "{message}");
    assert_eq!(server.requests_served(), 1);

    // Through the API.
    server.set_scenario(Scenario::new().then(Step::http_error(402)));
    assert_eq!(server.requests_served(), 0);
    assert_eq!(client.model(WireFormat::OpenAi, false).await.response().status, 402);
    server.reset();
    assert_eq!(client.model(WireFormat::OpenAi, false).await.response().status, 402);
}

const FULL: &str = r#"{
  "steps": [
    {"kind": "http_error", "status": 429, "retry_after": 2, "times": 2},
    {"kind": "http_error", "status": 529, "retry_after_ms": 150, "x_should_retry": true,
     "headers": {"x-extra": "1"}},
    {"kind": "http_error", "status": 500, "error_type": "api_error", "message": "", "code": "c", "param": "p"},
    {"kind": "http_error", "status": 502, "body": "<html/>", "retry_after": "Wed, 21 Oct 2015 07:28:00 GMT"},
    {"kind": "close_before_headers"},
    {"kind": "drop_stream", "after_chunks": 3, "text": "one two three four five"},
    {"kind": "truncate", "after_chunks": 1, "chunks": 4},
    {"kind": "sse_error", "after_chunks": 2, "error_type": "overloaded_error", "message": "Overloaded", "status": 529},
    {"kind": "malformed_chunk", "after_chunks": 1, "data": "{not json"},
    {"kind": "stall", "ms": 20},
    {"kind": "stall", "ms": 20, "after_chunks": 2},
    {"kind": "hang"},
    {"kind": "hang", "after_chunks": 1},
    {"kind": "context_overflow"},
    {"kind": "invalid_api_key", "times": 3},
    {"kind": "ok", "text": "Recovered.", "chunks": 2, "chunk_delay_ms": 5}
  ],
  "default": {"kind": "ok", "text": "fine"}
}"#;

fn full_in_rust() -> Scenario {
    Scenario::new()
        .then_times(2, Step::http_error(429).retry_after_secs(2))
        .then(Step::http_error(529).retry_after_ms(150).should_retry(true).header("x-extra", "1"))
        .then(Step::http_error(500).error_type("api_error").message("").code("c").param("p"))
        .then(Step::http_error(502).body("<html/>").retry_after("Wed, 21 Oct 2015 07:28:00 GMT"))
        .then(Step::close_before_headers())
        .then(Step::drop_stream(3).text("one two three four five"))
        .then(Step::truncate(1).chunks(4))
        .then(Step::sse_error(2).error_type("overloaded_error").message("Overloaded").status(529))
        .then(Step::malformed_chunk(1).data("{not json"))
        .then(Step::stall(20))
        .then(Step::stall(20).after_chunks(2))
        .then(Step::hang())
        .then(Step::hang().after_chunks(1))
        .then(Step::context_overflow())
        .then_times(3, Step::invalid_api_key())
        .then(Step::ok("Recovered.").chunks(2).chunk_delay_ms(5))
        .otherwise(Step::ok("fine"))
}

#[test]
fn a_file_loads_into_the_same_scenario_as_the_builder() {
    let file = TempFile::with_contents("full.json", FULL);
    let loaded = Scenario::load(&file.0).unwrap();
    assert_eq!(loaded, full_in_rust());
    assert_eq!(loaded.scripted_requests(), 19);
    let kinds: Vec<_> = loaded.steps().map(|(s, _)| s.kind().as_str()).collect();
    assert_eq!(kinds[3..6], ["http_error", "close_before_headers", "drop_stream"]);
}

#[test]
fn to_json_round_trips() {
    let scenario = full_in_rust();
    let json = scenario.to_json();
    assert_eq!(Scenario::from_json_str(&json).unwrap(), scenario);
    assert_eq!(Scenario::from_json_str(&Scenario::new().to_json()).unwrap(), Scenario::new());
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        value["steps"][0],
        serde_json::json!({"kind": "http_error", "status": 429, "retry_after": 2, "times": 2})
    );
}

#[track_caller]
fn error_of(json: &str) -> (ScenarioError, String) {
    let file = TempFile::with_contents("bad.json", json);
    let err = Scenario::load(&file.0).unwrap_err();
    let text = err.to_string();
    let name = file.0.display().to_string();
    assert!(text.contains(&name), "{text:?} names the file");
    assert_eq!(err.file(), Some(file.0.as_path()));
    (err, text)
}

#[test]
fn a_typo_names_the_file_the_field_and_the_line() {
    let (err, text) =
        error_of("{\n  \"steps\": [\n    {\"kind\": \"ok\"},\n    {\"kind\": \"http_error\", \"staus\": 429}\n  ]\n}");
    assert_eq!(err.field(), Some("steps[1].staus"));
    assert_eq!(err.line(), Some(4));
    assert!(text.contains("unknown field `staus`"), "{text}");
    assert!(text.contains("`status`"), "the valid fields are listed: {text}");
    assert!(text.contains("line 4"), "{text}");
    assert!(text.ends_with("did you mean `status`?"), "{text}");
}

#[test]
fn a_wrong_type_names_the_field_and_the_line() {
    let (err, text) = error_of("{\"steps\": [\n {\"kind\": \"http_error\", \"status\": \"429\"}]}");
    assert_eq!(err.field(), Some("steps[0].status"));
    assert_eq!(err.line(), Some(2));
    assert!(text.contains("invalid type: string \"429\", expected u16"), "{text}");
}

#[test]
fn an_unknown_kind_lists_the_kinds() {
    let (err, text) = error_of(r#"{"steps": [{"kind": "drop_streem"}]}"#);
    assert_eq!(err.field(), Some("steps[0].kind"));
    assert!(text.contains("unknown variant `drop_streem`"), "{text}");
    assert!(text.contains("`drop_stream`"), "{text}");
    assert!(text.ends_with("did you mean `drop_stream`?"), "{text}");
}

#[test]
fn a_field_of_another_kind_is_refused() {
    let (err, text) = error_of(r#"{"steps": [{"kind": "drop_stream", "retry_after": 2}]}"#);
    assert_eq!(err.field(), Some("steps[0].retry_after"));
    assert!(text.contains("does not apply to a `drop_stream` step; it applies to `http_error`"), "{text}");
    let (err, _) = error_of(r#"{"steps": [], "default": {"kind": "close_before_headers", "text": "x"}}"#);
    assert_eq!(err.field(), Some("default.text"));
}

#[test]
fn missing_and_out_of_range_values_are_refused() {
    let cases = [
        (r#"{"steps": [{"kind": "http_error"}]}"#, "steps[0].status", "needs a `status`"),
        (r#"{"steps": [{"kind": "stall"}]}"#, "steps[0].ms", "needs `ms`"),
        (r#"{"steps": [{"kind": "ok", "times": 0}]}"#, "steps[0].times", "at least 1"),
        (r#"{"steps": [{"kind": "ok", "chunks": 0}]}"#, "steps[0].chunks", "at least 1"),
        (r#"{"steps": [{"kind": "http_error", "status": 42}]}"#, "steps[0].status", "from 400 to 599, not 42"),
        (r#"{"default": {"kind": "ok", "times": 2}}"#, "default.times", "takes no `times`"),
        (r#"{"steps": [{"times": 2}]}"#, "steps[0]", "missing field `kind`"),
        (r#"{"steps": [{"kind": "ok", "headers": {"bad name": "x"}}]}"#, "steps[0].headers", "not a valid header name"),
        (r#"{"steps": [{"kind": "malformed_chunk", "data": "a\nb"}]}"#, "steps[0].data", "one line"),
        (r#"{"stepz": []}"#, "stepz", "unknown field `stepz`"),
    ];
    for (json, field, message) in cases {
        let (err, text) = error_of(json);
        assert_eq!(err.field(), Some(field), "{json}: {text}");
        assert!(text.contains(message), "{json}: {text}");
    }
}

#[test]
fn a_syntax_error_names_the_line() {
    let (err, text) = error_of("{\"steps\": [\n  {\"kind\": \"ok\"},\n]}");
    assert_eq!(err.line(), Some(3));
    assert!(text.contains("line 3 column"), "{text}");
    let (err, text) = error_of("{} trailing");
    assert_eq!(err.line(), Some(1));
    assert!(text.contains("trailing characters"), "{text}");
}

#[test]
fn a_missing_file_is_a_read_error_naming_it() {
    let path = std::env::temp_dir().join("agentic-chaos-no-such-file.json");
    let err = Scenario::load(&path).unwrap_err();
    assert!(matches!(err, ScenarioError::Read { .. }));
    assert!(err.to_string().contains("agentic-chaos-no-such-file.json"));
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn json_without_a_file_says_so() {
    let err = Scenario::from_json_str(r#"{"steps": 3}"#).unwrap_err();
    assert!(err.to_string().starts_with("scenario JSON, line 1"), "{err}");
    assert_eq!(err.file(), None);
    assert_eq!(err.field(), Some("steps"));
}

/// The field and message of the refusal of `json` loaded from a file, after checking that the
/// whole text is `scenario file `PATH`, `FIELD`: MESSAGE`.
#[track_caller]
fn refusal(json: &str) -> (String, String) {
    let (err, text) = error_of(json);
    let ScenarioError::Invalid { file: Some(file), field: Some(field), line: None, message, .. } = err else {
        panic!("a refusal after parsing: {err:?}");
    };
    assert_eq!(text, format!("scenario file `{}`, `{field}`: {message}", file.display()));
    (field, message)
}

#[test]
fn an_answer_too_large_for_memory_is_refused_at_load() {
    let cases = [
        (
            r#"{"steps":[{"kind":"ok","chunks":4294967295}]}"#.to_owned(),
            "steps[0].chunks",
            "`chunks` must be at most 100000 (the chaos server's limit), not 4294967295".to_owned(),
        ),
        (
            r#"{"steps":[{"kind":"hang","after_chunks":100001}]}"#.to_owned(),
            "steps[0].after_chunks",
            "`after_chunks` must be at most 100000 (the chaos server's limit), not 100001".to_owned(),
        ),
        (
            format!(r#"{{"steps":[{{"kind":"ok","text":"{}"}}]}}"#, "x".repeat(MAX_TEXT_BYTES + 1)),
            "steps[0].text",
            "`text` is 8388609 bytes long, more than the chaos server's limit of 8388608 bytes (8 MiB)".to_owned(),
        ),
        (
            format!(r#"{{"default":{{"kind":"endless_text","text":"{}"}}}}"#, "a ".repeat(100_001)),
            "default.text",
            "`text` has 100001 words, streamed one chunk per word: more than the 100000 chunks an answer may \
             have; set `chunks` to at most 100000"
                .to_owned(),
        ),
        (
            format!(
                r#"{{"steps":[{{"kind":"http_error","status":500,"body":"{}"}}]}}"#,
                "x".repeat(MAX_TEXT_BYTES + 1)
            ),
            "steps[0].body",
            "`body` is 8388609 bytes long, more than the chaos server's limit of 8388608 bytes (8 MiB)".to_owned(),
        ),
        (
            format!(r#"{{"steps":[{{"kind":"ok","headers":{{"x-big":"{}"}}}}]}}"#, "x".repeat(MAX_TEXT_BYTES + 1)),
            "steps[0].headers.x-big",
            "`headers.x-big` is 8388609 bytes long, more than the chaos server's limit of 8388608 bytes (8 MiB)"
                .to_owned(),
        ),
        (
            format!(r#"{{"steps":[{{"kind":"tool_use","calls":[{}]}}]}}"#, vec![r#"{"name":"f"}"#; 1001].join(",")),
            "steps[0].calls",
            "a `tool_use` step may have at most 1000 calls, not 1001".to_owned(),
        ),
        (
            format!(
                r#"{{"steps":[{{"kind":"tool_use","chunks":60000,"calls":[{call},{call}]}}]}}"#,
                call = format!(r#"{{"name":"f","input":{{"a":"{}"}}}}"#, "x".repeat(70_000))
            ),
            "steps[0].chunks",
            "the calls' arguments would stream in 120000 chunks in all, more than the 100000 an answer may have; \
             lower `chunks`"
                .to_owned(),
        ),
    ];
    for (json, field, message) in cases {
        assert_eq!(refusal(&json), (field.to_owned(), message), "{}", &json[..60.min(json.len())]);
    }
    // At the limits, everything loads.
    let json = format!(
        r#"{{"steps":[{{"kind":"ok","chunks":100000,"text":"{}"}},{{"kind":"hang","after_chunks":100000}}]}}"#,
        "x".repeat(MAX_TEXT_BYTES)
    );
    assert_eq!(Scenario::from_json_str(&json).unwrap().steps().len(), 2);
    assert_eq!((MAX_CHUNKS, MAX_TOOL_CALLS), (100_000, 1_000));
}

#[test]
fn a_top_level_array_is_refused() {
    let (err, text) = error_of("[]");
    let file = err.file().unwrap().display().to_string();
    assert_eq!(
        text,
        format!(
            "scenario file `{file}`, line 1 column 1: a scenario is a JSON object `{{\"steps\": [...]}}`, not an array"
        )
    );
    assert_eq!(err.field(), None);
    // serde alone would read an array's items into the fields in order: this one would load.
    let (err, text) = error_of("\n  [[{\"kind\": \"ok\"}], null]");
    assert_eq!(err.line(), Some(2));
    assert!(text.contains("line 2 column 3: a scenario is a JSON object"), "{text}");
    let err = Scenario::from_json_str("\"steps\"").unwrap_err();
    assert_eq!(
        err.to_string(),
        "scenario JSON, line 1 column 7: invalid type: string \"steps\", expected a scenario object `{\"steps\": [...]}`"
    );
}

#[test]
fn an_http_error_status_outside_400_to_599_is_refused() {
    for (kind, status) in [("http_error", 200), ("http_error", 399), ("http_error", 600), ("invalid_api_key", 302)] {
        let json = format!(r#"{{"steps":[{{"kind":"{kind}","status":{status}}}]}}"#);
        let message = format!("`status` must be an HTTP error status, from 400 to 599, not {status}");
        assert_eq!(refusal(&json), ("steps[0].status".to_owned(), message));
    }
    for status in [400, 599] {
        Scenario::from_json_str(&format!(r#"{{"steps":[{{"kind":"http_error","status":{status}}}]}}"#)).unwrap();
    }
}

#[test]
fn the_new_fields_are_checked() {
    let cases = [
        (
            r#"{"steps":[{"kind":"hang","at":"in_headers","after_chunks":1}]}"#,
            "steps[0].at",
            "`at` and `after_chunks` exclude each other: `at` hangs before, in or after the headers or \
             after the stream's opening event, `after_chunks` after some chunks of the body",
        ),
        (
            r#"{"steps":[{"kind":"http_error","status":503,"interval_ms":0}]}"#,
            "steps[0].interval_ms",
            "`interval_ms` paces an endless body: add `\"endless_body\": true`, or remove `interval_ms`",
        ),
        (
            r#"{"steps":[{"kind":"ok","ping":true}]}"#,
            "steps[0].ping",
            "does not apply to a `ok` step; it applies to `keep_alive_flood`",
        ),
        (
            r#"{"steps":[{"kind":"endless_text","text":""}]}"#,
            "steps[0].text",
            "an `endless_text` step needs a non-empty `text`: its chunks are sent over and over",
        ),
        (
            r#"{"steps":[{"kind":"wrong_content_type","content_type":"text/html\u0000"}]}"#,
            "steps[0].content_type",
            "a header value must not contain CR, LF or NUL",
        ),
        (
            r#"{"steps":[{"kind":"endless_json","text":"x"}]}"#,
            "steps[0].text",
            "does not apply to a `endless_json` step; it applies to `ok`, `drop_stream`, `truncate`, `sse_error`, \
             `stall`, `hang`, `malformed_chunk`, `tool_use`, `keep_alive_flood`, `empty_chunk_flood`, `endless_text`",
        ),
    ];
    for (json, field, message) in cases {
        assert_eq!(refusal(json), (field.to_owned(), message.to_owned()), "{json}");
    }
    let (err, text) = error_of(r#"{"steps":[{"kind":"http_error","status":401,"echo_key":"first13"}]}"#);
    assert_eq!(err.field(), Some("steps[0].echo_key"));
    assert!(text.ends_with("did you mean `first12`?"), "{text}");
    let (err, text) = error_of(r#"{"steps":[{"kind":"hang","at":"during"}]}"#);
    assert_eq!(err.field(), Some("steps[0].at"));
    assert!(text.contains("expected one of `before_headers`, `in_headers`, `after_headers`"), "{text}");
    let (err, text) = error_of(r#"{"steps":[{"kind":"http_error","status":429,"retry_after":1e300}]}"#);
    assert_eq!(err.field(), Some("steps[0].retry_after"));
    assert!(
        text.ends_with(
            "as a number, `retry_after` is whole seconds below 2^64; to send any other value, write it as a string, \
             e.g. `\"1e300\"`"
        ),
        "{text}"
    );
}

const NEW_KINDS: &str = r#"{
  "steps": [
    {"kind": "hang", "at": "in_headers"},
    {"kind": "hang", "at": "after_headers"},
    {"kind": "hang", "at": "before_headers"},
    {"kind": "keep_alive_flood"},
    {"kind": "keep_alive_flood", "after_chunks": 2, "ping": true, "interval_ms": 0, "text": "a b c"},
    {"kind": "empty_chunk_flood", "after_chunks": 1, "interval_ms": 5},
    {"kind": "endless_text", "text": "more ", "chunks": 1, "interval_ms": 0},
    {"kind": "endless_json", "interval_ms": 3600000, "headers": {"x-proxy": "1"}},
    {"kind": "http_error", "status": 503, "endless_body": true},
    {"kind": "http_error", "status": 401, "echo_key": "last12", "endless_body": true, "interval_ms": 1},
    {"kind": "invalid_api_key", "echo_key": "without_prefix"},
    {"kind": "sse_error", "after_chunks": 1, "echo_key": "first12"},
    {"kind": "wrong_content_type"},
    {"kind": "wrong_content_type", "content_type": "text/plain", "body": "no"},
    {"kind": "http_error", "status": 429, "retry_after": "99999999999999999999999"}
  ],
  "default": {"kind": "endless_text"}
}"#;

fn new_kinds_in_rust() -> Scenario {
    Scenario::new()
        .then(Step::hang().in_headers())
        .then(Step::hang().after_headers())
        .then(Step::hang())
        .then(Step::keep_alive_flood())
        .then(Step::keep_alive_flood().after_chunks(2).ping().interval_ms(0).text("a b c"))
        .then(Step::empty_chunk_flood().after_chunks(1).interval_ms(5))
        .then(Step::endless_text().text("more ").chunks(1).interval_ms(0))
        .then(Step::endless_json().interval_ms(3_600_000).header("x-proxy", "1"))
        .then(Step::http_error(503).endless_body())
        .then(Step::http_error(401).echo_key(EchoKey::Last12).interval_ms(1))
        .then(Step::invalid_api_key().echo_key(EchoKey::WithoutPrefix))
        .then(Step::sse_error(1).echo_key(EchoKey::First12))
        .then(Step::wrong_content_type())
        .then(Step::wrong_content_type().content_type("text/plain").body("no"))
        .then(Step::http_error(429).retry_after("99999999999999999999999"))
        .otherwise(Step::endless_text())
}

#[test]
fn the_new_kinds_load_like_the_builder_and_round_trip() {
    let loaded = Scenario::from_json_str(NEW_KINDS).unwrap();
    assert_eq!(loaded, new_kinds_in_rust());
    let json = loaded.to_json();
    assert_eq!(Scenario::from_json_str(&json).unwrap(), loaded);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["steps"][2], serde_json::json!({"kind": "hang"}));
    assert_eq!(value["steps"][8], serde_json::json!({"kind": "http_error", "status": 503, "endless_body": true}));
    let kinds: Vec<&str> = loaded.steps().map(|(s, _)| s.kind().as_str()).skip(3).step_by(2).collect();
    assert_eq!(
        kinds,
        ["keep_alive_flood", "empty_chunk_flood", "endless_json", "http_error", "sse_error", "wrong_content_type"]
    );
    assert_eq!(loaded.default_step().kind(), StepKind::EndlessText);
    assert_eq!(serde_json::to_value(StepKind::EmptyChunkFlood).unwrap(), "empty_chunk_flood");
}
