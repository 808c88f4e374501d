//! The token usage and the model every answer reports, by the documented rule or pinned by the
//! step, in both wire formats.

use crate::common;

use agentic_chaos::{ChaosServer, Scenario, Step, TokenUsage};
use common::{Client, End, Response, WireFormat};
use serde_json::{Value, json};

async fn serve(step: impl Into<Step>) -> ChaosServer {
    ChaosServer::start(Scenario::new().then_times(100, step)).await.expect("start the server")
}

/// A request whose prompt has 6 words ("Answer briefly." and "What is the answer?"), streamed or
/// not; an OpenAI request asks for the usage chunk when `include_usage`.
fn prompt(wire: WireFormat, stream: bool, include_usage: bool) -> String {
    let body = match wire {
        WireFormat::OpenAi => json!({"model": "gpt-test", "stream": stream, "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "What is the answer?"},
        ]}),
        _ => json!({"model": "claude-test", "max_tokens": 64, "stream": stream, "system": "Answer briefly.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "What is the answer?"}]}]}),
    };
    let mut body = body;
    if include_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    body.to_string()
}

async fn ask(server: &ChaosServer, wire: WireFormat, stream: bool, include_usage: bool) -> Response {
    let body = prompt(wire, stream, include_usage);
    Client::connect(server.addr()).await.request("POST", wire.path(), &[], &body).await.response()
}

/// The data of every event that carries a `usage` object (OpenAI chunks, Anthropic events).
fn usages(response: &Response) -> Vec<Value> {
    response
        .events()
        .iter()
        .filter(|event| event.data != "[DONE]")
        .map(common::Event::json)
        .filter_map(|data| data.get("usage").or_else(|| data.pointer("/message/usage")).cloned())
        .filter(|usage| !usage.is_null())
        .collect()
}

#[tokio::test]
async fn openai_sends_the_usage_chunk_only_when_asked_with_the_model_echoed() {
    let server = serve(Step::ok("The answer is 42.")).await;
    let asked = ask(&server, WireFormat::OpenAi, true, true).await;
    let events = asked.events();
    let chunk = events[events.len() - 2].json();
    assert_eq!(chunk["choices"], json!([]));
    assert_eq!(chunk["model"], "gpt-test");
    assert_eq!(
        chunk["usage"],
        json!({"prompt_tokens": 6, "completion_tokens": 4, "total_tokens": 10, "prompt_tokens_details": {"cached_tokens": 0}})
    );
    assert_eq!(events[events.len() - 3].json()["choices"][0]["finish_reason"], "stop", "after the finish_reason");
    assert_eq!(events.last().unwrap().data, "[DONE]");
    assert!(events[..events.len() - 1].iter().all(|event| event.json()["model"] == "gpt-test"));

    let unasked = ask(&server, WireFormat::OpenAi, true, false).await;
    assert_eq!(usages(&unasked), Vec::<Value>::new());
    assert_eq!(unasked.events().len(), events.len() - 1, "the same stream without the usage chunk");
}

#[tokio::test]
async fn anthropic_reports_the_input_at_the_start_and_the_output_at_the_end() {
    let server = serve(Step::ok("The answer is 42.")).await;
    let r = ask(&server, WireFormat::Anthropic, true, false).await;
    assert_eq!(r.events()[0].json()["message"]["model"], "claude-test");
    assert_eq!(
        usages(&r),
        [
            json!({"input_tokens": 6, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}),
            json!({"output_tokens": 4}),
        ]
    );
}

#[tokio::test]
async fn whole_answers_carry_the_usage_and_the_model() {
    let server = serve(Step::ok("The answer is 42.").chunks(2)).await;
    let openai = ask(&server, WireFormat::OpenAi, false, false).await.json();
    assert_eq!((openai["model"].as_str(), &openai["usage"]["prompt_tokens"]), (Some("gpt-test"), &json!(6)));
    assert_eq!(openai["usage"]["completion_tokens"], 2, "one token per chunk");
    let anthropic = ask(&server, WireFormat::Anthropic, false, false).await.json();
    assert_eq!(anthropic["model"], "claude-test");
    assert_eq!((&anthropic["usage"]["input_tokens"], &anthropic["usage"]["output_tokens"]), (&json!(6), &json!(2)));
}

#[tokio::test]
async fn a_pinned_usage_is_reported_as_given_in_both_formats() {
    let pinned = TokenUsage::new(1200, 7).with_cache_read(1024).with_cache_creation(3);
    let server = serve(Step::ok("Hi.").usage(pinned)).await;
    let openai = ask(&server, WireFormat::OpenAi, true, true).await;
    assert_eq!(
        usages(&openai),
        [
            json!({"prompt_tokens": 1200, "completion_tokens": 7, "total_tokens": 1207, "prompt_tokens_details": {"cached_tokens": 1024}})
        ]
    );
    let anthropic = ask(&server, WireFormat::Anthropic, true, false).await;
    assert_eq!(
        usages(&anthropic),
        [
            json!({"input_tokens": 1200, "cache_creation_input_tokens": 3, "cache_read_input_tokens": 1024, "output_tokens": 1}),
            json!({"output_tokens": 7}),
        ]
    );
    let whole = ask(&server, WireFormat::Anthropic, false, false).await.json();
    assert_eq!(
        whole["usage"],
        json!({"input_tokens": 1200, "cache_creation_input_tokens": 3, "cache_read_input_tokens": 1024, "output_tokens": 7})
    );

    // One count pinned: the other follows the rule.
    let server = serve(Step::ok("Hi there.").usage(TokenUsage::default().with_output_tokens(500))).await;
    let openai = ask(&server, WireFormat::OpenAi, false, false).await.json();
    assert_eq!((&openai["usage"]["prompt_tokens"], &openai["usage"]["completion_tokens"]), (&json!(6), &json!(500)));
}

#[tokio::test]
async fn a_fault_after_the_first_chunk_reports_the_input_on_anthropic_only() {
    let start =
        json!({"input_tokens": 6, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1});
    for (step, end) in [
        (Step::drop_stream(1).into_step(), End::Cut),
        (Step::truncate(1).into_step(), End::Clean),
        (Step::sse_error(1).into_step(), End::Clean),
    ] {
        let server = serve(step.clone()).await;
        let anthropic = ask(&server, WireFormat::Anthropic, true, false).await;
        assert_eq!((usages(&anthropic), &anthropic.end), (vec![start.clone()], &end), "{step:?}");
        let openai = ask(&server, WireFormat::OpenAi, true, true).await;
        assert_eq!((usages(&openai), &openai.end), (Vec::<Value>::new(), &end), "{step:?}");
    }
}

#[tokio::test]
async fn a_tool_use_answer_counts_its_argument_pieces_and_its_text() {
    let step = Step::tool_use("get_weather", json!({"city": "Paris"})).text("Checking.").argument_chunks(2);
    let server = serve(step).await;
    let openai = ask(&server, WireFormat::OpenAi, true, true).await;
    assert_eq!(usages(&openai)[0]["completion_tokens"], 3);
    let anthropic = ask(&server, WireFormat::Anthropic, true, false).await;
    assert_eq!(usages(&anthropic).last().unwrap(), &json!({"output_tokens": 3}));

    let server = serve(Step::tool_use("f", json!({})).usage(TokenUsage::new(50, 9))).await;
    let whole = ask(&server, WireFormat::OpenAi, false, false).await.json();
    assert_eq!((&whole["usage"]["prompt_tokens"], &whole["usage"]["completion_tokens"]), (&json!(50), &json!(9)));
}

#[test]
fn a_scenario_file_pins_usage_and_writes_it_back() {
    let scenario = Scenario::from_json_str(
        r#"{"steps": [
            {"kind": "ok", "usage": {"input_tokens": 12, "output_tokens": 3, "cache_read_input_tokens": 8}},
            {"kind": "drop_stream", "after_chunks": 1, "usage": {"input_tokens": 40}},
            {"kind": "tool_use", "calls": [{"name": "f"}], "usage": {"cache_creation_input_tokens": 5}},
            {"kind": "ok", "usage": {}}
        ]}"#,
    )
    .unwrap();
    let built = Scenario::new()
        .then(Step::ok(agentic_chaos::DEFAULT_TEXT).usage(TokenUsage::new(12, 3).with_cache_read(8)))
        .then(Step::drop_stream(1).usage(TokenUsage::default().with_input_tokens(40)))
        .then(Step::tool_use("f", json!({})).usage(TokenUsage::default().with_cache_creation(5)))
        .then(Step::ok(agentic_chaos::DEFAULT_TEXT));
    assert_eq!(scenario, built);
    let json = scenario.to_json();
    assert!(json.contains(r#""usage": {"#) && !json.contains("\"output_tokens\": null"), "{json}");
    assert_eq!(Scenario::from_json_str(&json).unwrap(), scenario);

    let refused = Scenario::from_json_str(r#"{"steps": [{"kind": "http_error", "status": 500, "usage": {}}]}"#);
    let error = refused.unwrap_err();
    assert_eq!(error.field(), Some("steps[0].usage"));
    assert!(error.to_string().contains("does not apply to a `http_error` step"), "{error}");

    let typo = Scenario::from_json_str(r#"{"steps": [{"kind": "ok", "usage": {"input_token": 3}}]}"#).unwrap_err();
    assert_eq!(typo.field(), Some("steps[0].usage.input_token"));
    assert!(typo.to_string().contains("did you mean `input_tokens`?"), "{typo}");
    let wrong = Scenario::from_json_str(r#"{"steps": [{"kind": "ok", "usage": 5}]}"#).unwrap_err();
    assert!(wrong.to_string().contains("a usage object"), "{wrong}");
}
