//! An HTTP error that states its rate limit in its body, as OpenRouter does (`stated_limit`):
//! the error object's numeric `code` and `metadata.headers`, the reset counted from the answer, on
//! every wire; in a scenario file as the builder builds it, and refused with a custom `body`.

use crate::common;

use std::time::{SystemTime, UNIX_EPOCH};

use agentic_chaos::{ChaosServer, Scenario, ScenarioError, StatedLimit, Step, WireFormat};
use serde_json::{Value, json};

const DAILY: &str =
    "Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day";
const FIVE_HOURS_MS: u64 = 5 * 3_600_000;

fn now_ms() -> u64 {
    u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

#[tokio::test]
async fn the_error_body_states_the_limit_with_its_reset_from_the_answer_on_every_wire() {
    let step = Step::http_error(429).message(DAILY).stated_limit(StatedLimit::new(50, 0, FIVE_HOURS_MS));
    let server = ChaosServer::start(Scenario::new().otherwise(step)).await.unwrap();
    for wire in WireFormat::ALL {
        let before = now_ms();
        let response = common::model(server.addr(), wire, true).await.response();
        let after = now_ms();
        assert_eq!(response.status, 429, "{wire:?}");
        let body = response.json();
        let error = &body["error"];
        assert_eq!(error["message"], DAILY, "{wire:?}: {body}");
        assert_eq!(error["code"], json!(429), "{wire:?}: the status, as a number");
        let headers = &error["metadata"]["headers"];
        assert_eq!((&headers["X-RateLimit-Limit"], &headers["X-RateLimit-Remaining"]), (&json!("50"), &json!("0")));
        let reset: u64 = headers["X-RateLimit-Reset"].as_str().unwrap().parse().unwrap();
        assert!((before + FIVE_HOURS_MS..=after + FIVE_HOURS_MS).contains(&reset), "{wire:?}: {reset}");
        assert_eq!(error["metadata"]["provider_name"], Value::Null);
    }
}

#[tokio::test]
async fn a_code_the_step_sets_is_kept() {
    let step = Step::http_error(429).code("rate_limit_exceeded").stated_limit(StatedLimit::new(20, 0, 40_000));
    let server = ChaosServer::start(Scenario::new().otherwise(step)).await.unwrap();
    let body = common::model(server.addr(), WireFormat::OpenAi, false).await.response().json();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    assert_eq!(body["error"]["metadata"]["headers"]["X-RateLimit-Limit"], "20");
}

#[test]
fn a_scenario_file_states_it_as_the_builder_does() {
    let file = r#"{"steps": [{"kind": "http_error", "status": 429, "message": "Rate limit exceeded: free-models-per-min.",
        "stated_limit": {"limit": 20, "remaining": 0, "reset_in_ms": 40000}}]}"#;
    let loaded = Scenario::from_json_str(file).unwrap();
    let built = Scenario::new().then(
        Step::http_error(429)
            .message("Rate limit exceeded: free-models-per-min.")
            .stated_limit(StatedLimit::new(20, 0, 40_000)),
    );
    assert_eq!(loaded, built);
    assert_eq!(Scenario::from_json_str(&loaded.to_json()).unwrap(), loaded);
}

#[test]
fn a_stated_limit_with_a_body_or_on_another_kind_is_refused_naming_the_field() {
    let refusal = |json: &str| match Scenario::from_json_str(json).unwrap_err() {
        ScenarioError::Invalid { field: Some(field), message, .. } => (field, message),
        other => panic!("{other:?}"),
    };
    let limit = r#""stated_limit": {"limit": 50, "remaining": 0, "reset_in_ms": 1}"#;
    let (field, message) =
        refusal(&format!(r#"{{"steps":[{{"kind":"http_error","status":429,"body":"x",{limit}}}]}}"#));
    assert_eq!(field, "steps[0].stated_limit");
    assert!(message.starts_with("`stated_limit` is written into the provider-shaped body"), "{message}");
    let (field, message) = refusal(&format!(r#"{{"steps":[{{"kind":"sse_error",{limit}}}]}}"#));
    assert_eq!(
        (field.as_str(), message.as_str()),
        ("steps[0].stated_limit", "does not apply to a `sse_error` step; it applies to `http_error`")
    );
    let unknown =
        r#"{"steps":[{"kind":"http_error","status":429,"stated_limit":{"limit":1,"remaining":0,"reset_ms":1}}]}"#;
    assert!(Scenario::from_json_str(unknown).unwrap_err().to_string().contains("reset_ms"));
}
