//! Typed answers (`Runtime::exec_json`): an answer that is not JSON of the type, or that the token
//! limit cut, is a rejected attempt whose reason goes back to the model; the schema reaches every
//! request.

use agentic_runtime::decision::Verdict;
use agentic_runtime::message::Message;
use agentic_runtime::policy::Jitter;
use agentic_runtime::{ExecErrorKind, RetryPolicy, Runtime, Scripted, ScriptedProvider};

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Invoice {
    currency: String,
    total: f64,
}

const GOOD: &str = r#"{"currency": "EUR", "total": 12.5}"#;

const POLICY: RetryPolicy = RetryPolicy::new().with_max_retries(3).with_jitter(Jitter::None);

fn last_user_text(messages: &[Message]) -> String {
    messages.iter().rev().find(|message| matches!(message, Message::User { .. })).map(Message::text).unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn broken_json_then_good_json_takes_two_calls_and_the_feedback_carries_the_parse_error() {
    let provider = ScriptedProvider::new([Scripted::ok(r#"{"currency": "EUR", "total": "x"}"#), Scripted::ok(GOOD)]);
    let runtime = Runtime::new(provider.clone());
    let invoice: Invoice = runtime.request("Read the invoice.").policy(&POLICY).json().await.unwrap();
    assert_eq!(invoice, Invoice { currency: "EUR".into(), total: 12.5 });
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let feedback = last_user_text(&requests[1].messages);
    assert_eq!(
        feedback,
        r#"Your previous reply was not valid `Invoice` JSON: total: invalid type: string "x", expected f64 at line 1 column 32. Answer again with only the JSON, fixing that."#
    );
}

#[tokio::test(start_paused = true)]
async fn a_reply_cut_by_the_token_limit_asks_for_a_complete_shorter_one() {
    let provider = ScriptedProvider::new([Scripted::truncated(r#"{"currency": "EU"#), Scripted::ok(GOOD)]);
    let runtime = Runtime::new(provider.clone());
    let invoice: Invoice = runtime.request("Read the invoice.").policy(&POLICY).json().await.unwrap();
    assert_eq!(invoice.total, 12.5);
    let feedback = last_user_text(&provider.requests()[1].messages);
    assert!(feedback.contains("cut off by the token limit") && feedback.contains("shorter"), "{feedback}");
}

#[tokio::test(start_paused = true)]
async fn json_of_the_wrong_shape_until_the_attempts_run_out_lists_each_parse_error() {
    let provider = ScriptedProvider::new([
        Scripted::ok(r#"{"total": 1}"#),
        Scripted::ok("here is your invoice"),
        Scripted::truncated(r#"{"currency": "#),
    ]);
    let error =
        Runtime::new(provider).request("Read the invoice.").policy(&POLICY).json::<Invoice>().await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::InvalidResult);
    assert_eq!(
        error.attempt_errors(),
        [
            "InvalidResult: the answer is not `Invoice` JSON: missing field `currency` at line 1 column 12",
            "InvalidResult: the answer is not `Invoice` JSON: expected value at line 1 column 1",
            "InvalidResult: the `Invoice` JSON was cut off by the token limit before it was complete",
        ]
    );
    let reasons: Vec<String> = error.decisions().iter().map(|decision| decision.reason().to_string()).collect();
    assert_eq!(reasons[0], "the answer is not the JSON asked for");
    assert_eq!(reasons[2], "the JSON answer was cut by the token limit; all 3 exec attempts used");
    assert_eq!(error.decisions().last().unwrap().verdict(), Verdict::Exhausted);
}

#[tokio::test(start_paused = true)]
async fn the_schema_reaches_every_request_and_plain_execs_send_none() {
    let provider = ScriptedProvider::new([Scripted::ok(GOOD), Scripted::ok("prose")]);
    let runtime = Runtime::new(provider.clone());
    let _: Invoice = runtime.exec_json("Read the invoice.").await.unwrap();
    runtime.exec("Say hi.").await.unwrap();
    let requests = provider.requests();
    let schema = requests[0].schema.as_ref().expect("exec_json sends the schema");
    assert_eq!(schema.name, "Invoice");
    assert_eq!(schema.schema["properties"]["total"]["type"], "number");
    assert_eq!(schema.schema["required"], serde_json::json!(["currency", "total"]));
    assert_eq!(requests[1].schema, None);
}

#[tokio::test(start_paused = true)]
async fn every_rule_of_the_policy_bounds_the_retries() {
    let provider = ScriptedProvider::new([Scripted::ok("no"), Scripted::ok("no"), Scripted::ok(GOOD)]);
    let policy = POLICY.with_max_calls(Some(2));
    let error = Runtime::new(provider).request("q").policy(&policy).json::<Invoice>().await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert_eq!(error.stopped_by(), Some("`max_calls` (2) reached after 2 model calls"));
}

/// Read the invoice.
#[agentic_runtime::agentic_function(max_retries = 2)]
async fn read_invoice(
    runtime: &Runtime,
    text: &str,
) -> Result<agentic_runtime::exec::TypedReply<Invoice>, agentic_runtime::ExecError> {
    runtime.request(text).typed::<Invoice>().await
}

#[tokio::test(start_paused = true)]
async fn a_typed_reply_keeps_the_execs_facts_in_an_agent_function_too() {
    let provider = ScriptedProvider::new([
        Scripted::error("overloaded"),
        Scripted::ok(r#"{"total": 1}"#),
        Scripted::ok(r#"{"currency": "EUR", "total": 12.5}"#),
    ]);
    let runtime = Runtime::new(provider.clone());
    let typed = read_invoice(&runtime, "Read this invoice: ...").await.unwrap();
    assert_eq!(typed.value().currency, "EUR");
    // The session retry of the overload and the exec retry of the unparsable answer are both kept.
    assert_eq!((typed.calls(), typed.attempts(), typed.decisions().len()), (3, 2, 2), "{:?}", typed.decisions());
    assert!(typed.total_usage().is_zero());
    assert!(provider.requests().iter().all(|request| request.function.as_deref() == Some("read_invoice")));
    assert_eq!(typed.into_value().total, 12.5);
}
