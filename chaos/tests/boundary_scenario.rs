//! The trust-boundary faults in scenario files: each kind and field loads as the builder builds
//! it, writes back to the same JSON, and a wrong value is refused naming the field.

use agentic_chaos::{BadHead, NotAnAnswer, Scenario, ScenarioError, Step};

const FILE: &str = r#"{
  "steps": [
    {"kind": "redirect"},
    {"kind": "redirect", "status": 308, "location": "http://127.0.0.1:9/v1/messages", "times": 2},
    {"kind": "redirect", "status": 301, "headers": {"x-hop": "1"}},
    {"kind": "http_error", "status": 429, "retry_after": 1, "stall_body_after": 10},
    {"kind": "context_overflow", "stall_body_after": 0},
    {"kind": "invalid_api_key", "stall_body_after": 25},
    {"kind": "not_an_answer"},
    {"kind": "not_an_answer", "shape": "models_list"},
    {"kind": "not_an_answer", "shape": "empty_chunk", "times": 3},
    {"kind": "bad_head"},
    {"kind": "bad_head", "shape": "huge_header"},
    {"kind": "bad_head", "shape": "garbage_status"},
    {"kind": "bare_json_error"},
    {"kind": "bare_json_error", "error_type": "insufficient_quota", "message": "", "code": "quota",
     "headers": {"x-a": "1"}},
    {"kind": "hang", "at": "after_start", "headers": {"x-b": "2"}}
  ]
}"#;

fn in_rust() -> Scenario {
    Scenario::new()
        .then(Step::redirect())
        .then_times(2, Step::redirect().status(308).location("http://127.0.0.1:9/v1/messages"))
        .then(Step::redirect().status(301).header("x-hop", "1"))
        .then(Step::http_error(429).retry_after_secs(1).stall_body_after(10))
        .then(Step::context_overflow().stall_body_after(0))
        .then(Step::invalid_api_key().endless_body().stall_body_after(25))
        .then(Step::not_an_answer(NotAnAnswer::JsonObject))
        .then(Step::not_an_answer(NotAnAnswer::ModelsList))
        .then_times(3, Step::not_an_answer(NotAnAnswer::EmptyChunk))
        .then(Step::bad_head(BadHead::ManyHeaders))
        .then(Step::bad_head(BadHead::HugeHeader))
        .then(Step::bad_head(BadHead::GarbageStatus))
        .then(Step::bare_json_error())
        .then(Step::bare_json_error().error_type("insufficient_quota").message("").code("quota").header("x-a", "1"))
        .then(Step::hang().after_start().header("x-b", "2"))
}

#[test]
fn the_file_loads_as_the_builder_builds_and_round_trips() {
    let loaded = Scenario::from_json_str(FILE).unwrap();
    assert_eq!(loaded, in_rust());
    let json = loaded.to_json();
    assert_eq!(Scenario::from_json_str(&json).unwrap(), loaded);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["steps"][0], serde_json::json!({"kind": "redirect"}));
    assert_eq!(value["steps"][6], serde_json::json!({"kind": "not_an_answer"}), "the default shape is left out");
    assert_eq!(value["steps"][7], serde_json::json!({"kind": "not_an_answer", "shape": "models_list"}));
    assert_eq!(
        value["steps"][1],
        serde_json::json!({"kind": "redirect", "status": 308, "location": "http://127.0.0.1:9/v1/messages", "times": 2})
    );
}

/// The field and message of the refusal of `json`.
#[track_caller]
fn refusal(json: &str) -> (String, String) {
    let err = Scenario::from_json_str(json).unwrap_err();
    let ScenarioError::Invalid { field: Some(field), message, .. } = err else {
        panic!("a refusal naming a field: {err:?}");
    };
    (field, message)
}

#[test]
fn wrong_values_are_refused_naming_the_field() {
    let cases = [
        (
            r#"{"steps":[{"kind":"redirect","status":300}]}"#,
            "steps[0].status",
            "a `redirect` step's `status` must be 301, 302, 303, 307 or 308, not 300",
        ),
        (
            r#"{"steps":[{"kind":"redirect","status":404}]}"#,
            "steps[0].status",
            "a `redirect` step's `status` must be 301, 302, 303, 307 or 308, not 404",
        ),
        (
            r#"{"steps":[{"kind":"http_error","status":307}]}"#,
            "steps[0].status",
            "`status` must be an HTTP error status, from 400 to 599, not 307",
        ),
        (
            r#"{"steps":[{"kind":"redirect","location":"/v1/messages"}]}"#,
            "steps[0].location",
            "`location` must be an absolute URL, e.g. `http://127.0.0.1:9/v1/messages`, not \"/v1/messages\"; \
             remove it to redirect the request to its own URL",
        ),
        (
            r#"{"steps":[{"kind":"redirect","location":"http://a/\r\nx-evil: 1"}]}"#,
            "steps[0].location",
            "a header value must not contain CR, LF or NUL",
        ),
        (
            r#"{"steps":[{"kind":"ok","location":"http://a/"}]}"#,
            "steps[0].location",
            "does not apply to a `ok` step; it applies to `redirect`",
        ),
        (
            r#"{"steps":[{"kind":"http_error","status":500,"endless_body":true,"stall_body_after":3}]}"#,
            "steps[0].stall_body_after",
            "`stall_body_after` and `endless_body` exclude each other: `stall_body_after` stops a body of known \
             length part-way, `endless_body` never ends one; keep one",
        ),
        (
            r#"{"steps":[{"kind":"sse_error","stall_body_after":3}]}"#,
            "steps[0].stall_body_after",
            "does not apply to a `sse_error` step; it applies to `http_error`, `context_overflow`, `invalid_api_key`",
        ),
        (
            r#"{"steps":[{"kind":"not_an_answer","shape":"modles_list"}]}"#,
            "steps[0].shape",
            "unknown shape `modles_list` for a `not_an_answer` step, expected one of `json_object`, `status_ok`, \
             `json_array`, `no_choices`, `models_list`, `done_only`, `empty_chunk`; did you mean `models_list`?",
        ),
        (
            r#"{"steps":[{"kind":"not_an_answer","shape":"teapot"}]}"#,
            "steps[0].shape",
            "unknown shape `teapot` for a `not_an_answer` step, expected one of `json_object`, `status_ok`, \
             `json_array`, `no_choices`, `models_list`, `done_only`, `empty_chunk`",
        ),
        (
            r#"{"steps":[{"kind":"not_an_answer","text":"hi"}]}"#,
            "steps[0].text",
            "does not apply to a `not_an_answer` step; it applies to `ok`, `drop_stream`, `truncate`, `sse_error`, \
             `stall`, `hang`, `malformed_chunk`, `tool_use`, `keep_alive_flood`, `empty_chunk_flood`, `endless_text`",
        ),
        (
            r#"{"steps":[{"kind":"bad_head","shape":"json_object"}]}"#,
            "steps[0].shape",
            "unknown shape `json_object` for a `bad_head` step, expected one of `many_headers`, `huge_header`, \
             `garbage_status`",
        ),
        (
            r#"{"steps":[{"kind":"bad_head","shape":"many_header"}]}"#,
            "steps[0].shape",
            "unknown shape `many_header` for a `bad_head` step, expected one of `many_headers`, `huge_header`, \
             `garbage_status`; did you mean `many_headers`?",
        ),
        (
            r#"{"steps":[{"kind":"bad_head","headers":{"x-a":"1"}}]}"#,
            "steps[0].headers",
            "does not apply to a `bad_head` step; it applies to `ok`, `http_error`, `drop_stream`, `truncate`, \
             `sse_error`, `stall`, `hang`, `malformed_chunk`, `context_overflow`, `invalid_api_key`, `tool_use`, \
             `keep_alive_flood`, `empty_chunk_flood`, `endless_text`, `endless_json`, `wrong_content_type`, `redirect`, \
             `bare_json_error`",
        ),
        (
            r#"{"steps":[{"kind":"bare_json_error","status":401}]}"#,
            "steps[0].status",
            "does not apply to a `bare_json_error` step; it applies to `http_error`, `context_overflow`, \
             `invalid_api_key`, `sse_error`, `redirect`",
        ),
        (
            r#"{"steps":[{"kind":"hang","at":"after_start","after_chunks":0}]}"#,
            "steps[0].at",
            "`at` and `after_chunks` exclude each other: `at` hangs before, in or after the headers or \
             after the stream's opening event, `after_chunks` after some chunks of the body",
        ),
        (
            r#"{"steps":[{"kind":"http_error","status":500,"headers":{"x-title":"\u001b[2K\r"}}]}"#,
            "steps[0].headers.x-title",
            "a header value must not contain CR, LF or NUL",
        ),
        (
            r#"{"steps":[{"kind":"redirect","location":"http://a/\u001b[2K\r"}]}"#,
            "steps[0].location",
            "a header value must not contain CR, LF or NUL",
        ),
    ];
    for (json, field, message) in cases {
        assert_eq!(refusal(json), (field.to_owned(), message.to_owned()), "{json}");
    }
}

#[test]
fn every_shape_round_trips() {
    for shape in NotAnAnswer::ALL {
        let scenario = Scenario::new().then(Step::not_an_answer(shape));
        assert_eq!(Scenario::from_json_str(&scenario.to_json()).unwrap(), scenario, "{shape:?}");
        assert_eq!(serde_json::to_value(shape).unwrap(), shape.as_str());
    }
    for shape in BadHead::ALL {
        let scenario = Scenario::new().then(Step::bad_head(shape));
        assert_eq!(Scenario::from_json_str(&scenario.to_json()).unwrap(), scenario, "{shape:?}");
        assert_eq!(serde_json::to_value(shape).unwrap(), shape.as_str());
    }
}

#[test]
fn an_unknown_hang_point_lists_after_start() {
    let err = Scenario::from_json_str(r#"{"steps":[{"kind":"hang","at":"after_stat"}]}"#).unwrap_err();
    assert_eq!(err.field(), Some("steps[0].at"));
    let text = err.to_string();
    assert!(text.contains("expected one of `before_headers`, `in_headers`, `after_headers`, `after_start`"), "{text}");
    assert!(text.ends_with("did you mean `after_start`?"), "{text}");
}
