//! The trust-boundary faults in scenario files: each kind and field loads as the builder builds
//! it, writes back to the same JSON, and a wrong value is refused naming the field.

use agentic_chaos::{NotAnAnswer, Scenario, ScenarioError, Step};

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
    {"kind": "not_an_answer", "shape": "empty_chunk", "times": 3}
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
}
