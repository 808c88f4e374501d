//! An answer in a shape the wire does not read, against the chaos server on every wire and through
//! the scripted provider, on tokio's paused clock: the first call is asked again (one answer may be
//! mangled on its way), the second that fails on the same shape stops the exec, whose error names
//! the field; a corrupted stream (not JSON) is still retried as before. And Mistral's content parts
//! and a `finish_reason` that is not an answer, as the chaos server's OpenAI wire sends them.

use agentic_chaos::{ChaosServer, MalformedShape, Scenario, Step};
use agentic_runtime::classify::Reason;
use agentic_runtime::decision::{Rule, Verdict, Why};
use agentic_runtime::exec::RuntimeBuilder;
use agentic_runtime::provider::{ModelError, TransportKind};
use agentic_runtime::provider::{Scripted, ScriptedProvider};
use agentic_runtime::{ExecErrorKind, Runtime};
use agentic_test_support::wires;

/// What the error names of the field the chaos server's `unreadable` chunk holds of another type
/// on `wire` (`MalformedShape::Unreadable`).
fn unreadable_field(wire: &str) -> &'static str {
    match wire {
        "openai" => "`choices[0].delta.content`",
        // An event read by its `type` tag: serde loses the path inside it, not what the field held.
        "anthropic" => r#"invalid type: string "first", expected u32"#,
        "gemini" => "`candidates[0].content.parts[0].text`",
        "responses" => "`output_index`",
        other => panic!("no unreadable field for the wire `{other}`: add one"),
    }
}

/// Every wire: two requests (not the twelve a corrupted stream gets), and an error that says the
/// format is not one this client reads, naming the field.
#[tokio::test(start_paused = true)]
async fn a_shape_the_wire_does_not_read_stops_at_the_second_call_on_every_wire() {
    for wire in wires::all() {
        let field = unreadable_field(wire.name());
        let step = Step::malformed_chunk(1).shape(MalformedShape::Unreadable);
        let server = ChaosServer::start(Scenario::new().otherwise(step)).await.unwrap();
        let runtime = RuntimeBuilder::from_shared(wire.provider(&server)).with_jitter_seed(7).build().unwrap();
        let error = runtime.exec("hi").await.unwrap_err();
        assert_eq!(server.journal().len(), 2, "{}: {error}", wire.name());
        assert_eq!(error.kind(), ExecErrorKind::Permanent, "{}: {error}", wire.name());
        let text = error.to_string();
        assert!(
            text.starts_with(
                "exec() failed permanently:\nAttempt 1: MalformedStreamError: malformed chunk: an answer in a format \
                 this client does not read, the same on two calls (not a corrupted stream: not asked again): "
            ),
            "{}: {text}",
            wire.name()
        );
        assert!(text.contains(field), "{}: {text}", wire.name());
        let verdicts: Vec<Verdict> = error.decisions().iter().map(|decision| decision.verdict()).collect();
        assert_eq!(verdicts, [Verdict::Retry, Verdict::GiveUp, Verdict::FailPermanently], "{}", wire.name());
        assert_eq!(error.decisions()[2].reason(), Why::Judged(Rule::Classifier(Reason::Unreadable)));
    }
}

/// Data that is not JSON is a corrupted stream: every call layer 1 and layer 2 allow is made, as
/// before (the rule is for valid JSON of a shape not read, and a cut chunk is not one).
#[tokio::test(start_paused = true)]
async fn a_chunk_that_is_not_json_is_still_retried_as_a_corrupted_stream() {
    let wire = wires::named("openai");
    let server = ChaosServer::start(Scenario::new().otherwise(Step::malformed_chunk(1))).await.unwrap();
    let runtime = RuntimeBuilder::from_shared(wire.provider(&server)).with_jitter_seed(7).build().unwrap();
    let error = runtime.exec("hi").await.unwrap_err();
    assert_eq!((error.kind(), server.journal().len()), (ExecErrorKind::Exhausted, 12), "{error}");
}

/// The failure the OpenAI wire makes of a chunk whose `what` could not be read.
fn unreadable(what: &str, id: u32) -> Scripted {
    let text = format!("malformed chunk: {what}: \"{{\\\"id\\\":\\\"chunk-{id}\\\"}}\"");
    Scripted::raise(ModelError::transport(TransportKind::Corrupted, text).with_code("unreadable_answer"))
}

/// Through the scripted provider: the same shape twice stops (the excerpt, with its ids, may
/// differ); two different shapes, or the same shape with another failure between them, are asked
/// again as corrupted streams.
#[tokio::test(start_paused = true)]
async fn only_the_same_shape_twice_in_a_row_stops() {
    let what = "`choices[0].delta.content`: invalid type: map, expected a string";
    let provider = ScriptedProvider::new([unreadable(what, 1), unreadable(what, 2), Scripted::ok("never")]);
    let error = Runtime::builder(provider.clone()).with_jitter_seed(7).build().unwrap().exec("hi").await.unwrap_err();
    assert_eq!((error.kind(), provider.calls()), (ExecErrorKind::Permanent, 2), "{error}");
    assert!(error.to_string().contains(&format!("not asked again): {what}: ")), "{error}");

    let other = "`choices[0].index`: invalid type: string \"0\", expected u32";
    let provider = ScriptedProvider::new([unreadable(what, 1), unreadable(other, 2), Scripted::ok("the answer")]);
    let reply = Runtime::builder(provider.clone()).with_jitter_seed(7).build().unwrap().exec("hi").await.unwrap();
    assert_eq!((reply.text(), provider.calls()), ("the answer", 3));

    let provider = ScriptedProvider::new([
        unreadable(what, 1),
        Scripted::http(503, "busy"),
        unreadable(what, 2),
        Scripted::ok("the answer"),
    ]);
    let reply = Runtime::builder(provider.clone()).with_jitter_seed(7).build().unwrap().exec("hi").await.unwrap();
    assert_eq!((reply.text(), provider.calls()), ("the answer", 4));
}

/// Mistral's reasoning models stream `content` as a list of parts: read, the answer is the text
/// parts, in one request (it was twelve, each chunk failing as malformed).
#[tokio::test(start_paused = true)]
async fn mistrals_content_parts_are_an_answer_at_the_first_request() {
    let parts = r#"{"id":"cmpl-1","object":"chat.completion.chunk","model":"magistral-medium-2509","choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"They greet me."}]},{"type":"text","text":"Bonjour. "}]}}]}"#;
    let step = Step::malformed_chunk(0).data(parts).text("Hello.");
    let server = ChaosServer::start(Scenario::new().otherwise(step)).await.unwrap();
    let runtime =
        RuntimeBuilder::from_shared(wires::named("openai").provider(&server)).with_jitter_seed(7).build().unwrap();
    let reply = runtime.exec("hi").await.unwrap();
    assert_eq!((reply.text(), server.journal().len()), ("Bonjour. Hello.", 1));
}

/// OpenRouter's `finish_reason: "error"` is the server's failure, retried; a `content_filter`
/// finish a permanent one, at the first request, whatever text came before it.
#[tokio::test(start_paused = true)]
async fn a_finish_reason_that_is_no_answer_fails_the_call() {
    let finish = |reason: &str| {
        format!(
            r#"{{"id":"cmpl-1","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{}},"finish_reason":"{reason}"}}]}}"#
        )
    };
    let filtered = Step::malformed_chunk(1).data(finish("content_filter"));
    let server = ChaosServer::start(Scenario::new().otherwise(filtered)).await.unwrap();
    let runtime =
        RuntimeBuilder::from_shared(wires::named("openai").provider(&server)).with_jitter_seed(7).build().unwrap();
    let error = runtime.exec("hi").await.unwrap_err();
    assert_eq!((error.kind(), server.journal().len()), (ExecErrorKind::Permanent, 1), "{error}");
    assert_eq!(
        error.to_string(),
        "exec() failed permanently:\nAttempt 1: ContentFilterError: the answer was stopped by the content filter \
         (`finish_reason` \"content_filter\"): the same request would be stopped again; change the prompt"
    );

    let failed = Step::malformed_chunk(1).data(finish("error"));
    let server = ChaosServer::start(Scenario::new().then(failed).otherwise(Step::ok("the answer"))).await.unwrap();
    let runtime =
        RuntimeBuilder::from_shared(wires::named("openai").provider(&server)).with_jitter_seed(7).build().unwrap();
    let reply = runtime.exec("hi").await.unwrap();
    assert_eq!((reply.text(), server.journal().len()), ("the answer", 2));
    assert!(reply.decisions()[0].error().starts_with("BadGatewayError: the server ended the answer as failed"));
}

/// The memory of the shape is the target's: the primary's answers fail twice on a shape (a format
/// this client does not read: the exec moves on), the fallback's first answer fails on the same
/// shape, and the fallback is asked again (its own format is judged on its own two calls). Before,
/// the primary's failure counted for the fallback, which was asked once and the exec failed.
#[tokio::test(start_paused = true)]
async fn a_fallback_gets_its_own_two_calls_before_its_format_is_taken_for_unreadable() {
    let what = "`choices[0].delta.content`: invalid type: map, expected a string";
    let primary = ScriptedProvider::new([unreadable(what, 1), unreadable(what, 2)]).with_model("a");
    let secondary = ScriptedProvider::new([unreadable(what, 3), Scripted::ok("from b")]).with_model("b");
    let runtime =
        Runtime::builder(primary.clone()).with_fallback(secondary.clone()).with_jitter_seed(7).build().unwrap();
    let reply = runtime.exec("hi").await.unwrap_or_else(|error| panic!("{error}"));
    assert_eq!((reply.text(), reply.target()), ("from b", Some("scripted/b")));
    assert_eq!((primary.calls(), secondary.calls()), (2, 2));

    // Its own shape twice stops it, as the primary's did.
    let primary = ScriptedProvider::new([unreadable(what, 1), unreadable(what, 2)]).with_model("a");
    let secondary = ScriptedProvider::new([unreadable(what, 3), unreadable(what, 4)]).with_model("b");
    let runtime =
        Runtime::builder(primary.clone()).with_fallback(secondary.clone()).with_jitter_seed(7).build().unwrap();
    let error = runtime.exec("hi").await.unwrap_err();
    assert_eq!((error.kind(), primary.calls(), secondary.calls()), (ExecErrorKind::Permanent, 2, 2), "{error}");
    assert_eq!(error.target(), Some("scripted/b"));
}
