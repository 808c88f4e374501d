//! Context overflow handed to compaction, with the scripted provider: the conversation is shortened
//! and the same turn made again; a compactor that cannot shrink it, or an overflow after the last
//! compaction allowed, ends the exec with `context_overflow` as without one; a summary is a model
//! call through both layers, within the exec's caps.

use agentic_runtime::compact::{CompactFuture, Compactor, DropOldest, Overflow, Summarize};
use agentic_runtime::decision::Decision;
use agentic_runtime::decision::{Layer, Verdict};
use agentic_runtime::message::{AssistantMessage, ContentBlock, Message, Role};
use agentic_runtime::observe::trace::{TraceEvent, TraceSink};
use agentic_runtime::{
    ExecError, ExecErrorKind, RetryPolicy, Runtime, Scripted, ScriptedProvider, Toolbox, agentic_function,
};
use serde_json::json;

const OVERFLOW: &str =
    "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens";

/// A tool whose every answer is a page of `n`.
fn pages() -> Toolbox {
    Toolbox::new().with_fn("read", "Reads the next page", json!({"type": "object"}), |input| async move {
        Ok(format!("page {}", input["n"]))
    })
}

/// Three tool turns, then the overflow, then what `then` says.
fn three_pages_then(then: impl IntoIterator<Item = Scripted>) -> ScriptedProvider {
    let mut steps = vec![
        Scripted::tool_call("read", json!({"n": 1})),
        Scripted::tool_call("read", json!({"n": 2})),
        Scripted::tool_call("read", json!({"n": 3})),
        Scripted::http(400, OVERFLOW),
    ];
    steps.extend(then);
    ScriptedProvider::new(steps)
}

/// The verdicts of layer 2, in order.
fn exec_verdicts(decisions: &[Decision]) -> Vec<Verdict> {
    decisions.iter().filter(|decision| decision.layer() == Layer::Exec).map(|decision| decision.verdict()).collect()
}

fn roles(messages: &[Message]) -> Vec<Role> {
    messages.iter().map(Message::role).collect()
}

#[tokio::test(start_paused = true)]
async fn an_overflow_is_compacted_and_the_same_turn_answers() {
    let provider = three_pages_then([Scripted::ok("The three pages say ...")]);
    let trace = TraceSink::in_memory().with_clock(|| 0);
    let runtime = Runtime::builder(provider.clone())
        .with_tools(pages())
        .with_compactor(DropOldest::keeping(1))
        .with_trace(trace.clone())
        .build()
        .unwrap();
    let reply = runtime.exec("Read the pages.").await.unwrap();
    assert_eq!(reply.text(), "The three pages say ...");
    assert_eq!(reply.calls(), 5);
    assert_eq!(reply.iterations(), 3);

    // The turn that overflowed had the prompt and three turns; the one made again, the prompt and
    // the last turn, with a note on the prompt.
    let requests = provider.requests();
    assert_eq!(requests[3].messages.len(), 7);
    let compacted = &requests[4].messages;
    assert_eq!(roles(compacted), [Role::User, Role::Assistant, Role::User]);
    assert_eq!(
        compacted[0].text(),
        "Read the pages.[4 messages of this conversation, after this one, were dropped to fit the context window.]"
    );
    assert!(matches!(&compacted[2], Message::User { content } if matches!(&content[0],
        ContentBlock::ToolResult { content, .. } if content == "page 3")));
    assert_eq!(requests[4].tools, ["read"], "the turn made again still offers the tools");

    // Layer 1 gives the overflow up (not its to retry); layer 2 compacts.
    let [give_up, decision] = reply.decisions() else { panic!("two decisions: {:?}", reply.decisions()) };
    assert_eq!((give_up.layer(), give_up.verdict(), give_up.call()), (Layer::Session, Verdict::GiveUp, 4));
    assert_eq!((decision.layer(), decision.verdict()), (Layer::Exec, Verdict::Compacted));
    assert_eq!(decision.call(), 4);
    assert!(decision.error().contains("maximum context length"), "{}", decision.error());
    assert_eq!(decision.reason(), "context overflow: compacted 7 → 3 messages by `drop_oldest`");
    assert_eq!(decision.delay(), None, "nothing to wait for");

    let events = TraceEvent::parse_all(&trace.contents().unwrap()).unwrap();
    let compactions: Vec<&TraceEvent> = events.iter().filter(|event| event.name() == "compaction").collect();
    assert_eq!(compactions.len(), 1);
    assert!(matches!(compactions[0], TraceEvent::Compaction { compactor, before: 7, after: 3, .. }
        if compactor == "drop_oldest"));
    assert_eq!(events.last().unwrap().name(), "agent_finish");
}

#[tokio::test(start_paused = true)]
async fn without_a_compactor_an_overflow_ends_the_exec_as_before() {
    let provider = three_pages_then([Scripted::ok("never")]);
    let error = Runtime::builder(provider.clone())
        .with_tools(pages())
        .build()
        .unwrap()
        .exec("Read the pages.")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::ContextOverflow);
    assert_eq!(provider.calls(), 4);
    assert_eq!(error.attempt_errors(), [format!("BadRequestError: 400 {OVERFLOW}")]);
}

#[tokio::test(start_paused = true)]
async fn a_compactor_that_cannot_shrink_the_conversation_ends_it_with_context_overflow() {
    // The prompt alone overflows: there is no turn to drop.
    let provider = ScriptedProvider::new([Scripted::http(400, OVERFLOW)]).otherwise(Scripted::ok("never"));
    let runtime = Runtime::builder(provider.clone()).with_compactor(DropOldest::keeping(2)).build().unwrap();
    let error = runtime.exec("A prompt that is far too long ...").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::ContextOverflow);
    assert_eq!(provider.calls(), 1);
    assert_eq!(
        error.attempt_errors(),
        [format!(
            "BadRequestError: 400 {OVERFLOW} (`drop_oldest` could not compact it: nothing to drop: the conversation is \
             the prompt and the last 2 turns (1 message))"
        )]
    );
    assert_eq!(exec_verdicts(error.decisions()), [Verdict::ContextOverflow]);
}

#[tokio::test(start_paused = true)]
async fn an_overflow_after_the_last_compaction_allowed_ends_the_exec() {
    let provider = three_pages_then([Scripted::http(400, OVERFLOW)]).otherwise(Scripted::ok("never"));
    let runtime =
        Runtime::builder(provider.clone()).with_tools(pages()).with_compactor(DropOldest::keeping(1)).build().unwrap();
    let error = runtime.exec("Read the pages.").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::ContextOverflow);
    assert_eq!(provider.calls(), 5);
    assert_eq!(exec_verdicts(error.decisions()), [Verdict::Compacted, Verdict::ContextOverflow]);
    assert!(
        error.attempt_errors()[0].ends_with("(compacted 7 → 3 messages by `drop_oldest`)"),
        "{:?}",
        error.attempt_errors()
    );
    assert!(
        error.attempt_errors()[1].ends_with(
            "(not compacted again: `drop_oldest` compacted this exec's conversation once already, the most \
             `RuntimeBuilder::with_max_compactions` allows)"
        ),
        "{:?}",
        error.attempts()
    );

    // Two compactions allowed: the second overflow is compacted too (to the same length: the
    // compactor cannot shrink it further) and the third ends the exec.
    let provider = three_pages_then([Scripted::http(400, OVERFLOW), Scripted::ok("done")]);
    let runtime = Runtime::builder(provider.clone())
        .with_tools(pages())
        .with_compactor(DropOldest::keeping(1))
        .with_max_compactions(2)
        .build()
        .unwrap();
    let error = runtime.exec("Read the pages.").await.unwrap_err();
    assert_eq!(provider.calls(), 5);
    assert!(
        error.attempt_errors()[1].contains("could not compact it: nothing to drop"),
        "{:?}",
        error.attempt_errors()
    );
}

#[tokio::test(start_paused = true)]
async fn a_summary_whose_call_fails_transiently_is_retried_and_replaces_the_old_turns() {
    let provider = three_pages_then([
        Scripted::http(429, "Too Many Requests"),
        Scripted::ok("Pages 1 and 2 list the parts A and B."),
        Scripted::ok("The parts are A, B and C."),
    ]);
    let runtime = Runtime::builder(provider.clone())
        .with_system("You read manuals.")
        .with_tools(pages())
        .with_compactor(Summarize::keeping(1))
        .build()
        .unwrap();
    let reply = runtime.exec("Read the pages.").await.unwrap();
    assert_eq!(reply.text(), "The parts are A, B and C.");
    assert_eq!(reply.calls(), 7);

    let requests = provider.requests();
    // The summary call: one question with the transcript of the turns it replaces, the exec's
    // system instruction, and no tools.
    for summary in &requests[4..6] {
        assert_eq!(summary.messages.len(), 1);
        assert_eq!(summary.system.as_deref(), Some("You read manuals."));
        assert!(summary.tools.is_empty(), "{:?}", summary.tools);
        let question = summary.messages[0].text();
        assert!(question.starts_with("The conversation below no longer fits your context window."), "{question}");
        assert!(question.contains("Task: Read the pages."), "{question}");
        assert!(question.contains("Tool call call_2 returned: page 2"), "{question}");
        assert!(!question.contains("page 3"), "the last turn is kept, not summarised: {question}");
    }
    let answered = &requests[6].messages;
    assert_eq!(roles(answered), [Role::User, Role::Assistant, Role::User]);
    assert!(
        answered[0].text().ends_with(
            "[Summary of the 4 messages of this conversation after this one, which were compacted to fit the \
             context window:]\nPages 1 and 2 list the parts A and B."
        ),
        "{}",
        answered[0].text()
    );
    assert_eq!(requests[6].tools, ["read"]);

    let decisions: Vec<(Layer, Verdict, u32)> =
        reply.decisions().iter().map(|decision| (decision.layer(), decision.verdict(), decision.call())).collect();
    assert_eq!(
        decisions,
        [
            (Layer::Session, Verdict::GiveUp, 4),
            (Layer::Session, Verdict::Retry, 5),
            (Layer::Exec, Verdict::Compacted, 4),
        ],
        "the overflow, the summary's retry, then the compaction"
    );
    assert_eq!(reply.decisions()[2].reason(), "context overflow: compacted 7 → 3 messages by `summarize`");
}

#[tokio::test(start_paused = true)]
async fn a_summary_counts_against_the_exec_max_calls() {
    // Four calls allowed: the overflow is the fourth, so no summary may be asked.
    let provider = three_pages_then([Scripted::ok("never")]);
    let runtime = Runtime::builder(provider.clone())
        .with_tools(pages())
        .with_policy(RetryPolicy::new().with_max_calls(Some(4)))
        .with_compactor(Summarize::keeping(1))
        .build()
        .unwrap();
    let error = runtime.exec("Read the pages.").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert_eq!(provider.calls(), 4);
    assert_eq!(error.stopped_by(), Some("`max_calls` (4) reached after 4 model calls"));

    // Five: the summary is the fifth call, and the turn it was for may not be made again.
    let provider = three_pages_then([Scripted::ok("A summary."), Scripted::ok("never")]);
    let runtime = Runtime::builder(provider.clone())
        .with_tools(pages())
        .with_policy(RetryPolicy::new().with_max_calls(Some(5)))
        .with_compactor(Summarize::keeping(1))
        .build()
        .unwrap();
    let error = runtime.exec("Read the pages.").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert_eq!(provider.calls(), 5);
    assert_eq!(exec_verdicts(error.decisions()), [Verdict::Compacted, Verdict::Refused]);
}

#[tokio::test(start_paused = true)]
async fn a_summary_that_fails_for_good_ends_the_exec_with_context_overflow_saying_why() {
    let provider = three_pages_then([Scripted::http(401, "invalid api key")]).otherwise(Scripted::ok("never"));
    let runtime =
        Runtime::builder(provider.clone()).with_tools(pages()).with_compactor(Summarize::keeping(1)).build().unwrap();
    let error = runtime.exec("Read the pages.").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::ContextOverflow);
    assert_eq!(provider.calls(), 5);
    let attempt = &error.attempt_errors()[0];
    assert!(
        attempt.contains(
            "(`summarize` could not compact it: the summary call failed: AuthenticationError: 401 invalid api key"
        ),
        "{attempt}"
    );
}

/// A compactor of the user's own that answers with a conversation the model cannot answer.
struct EndsWithTheModel;

impl Compactor for EndsWithTheModel {
    fn name(&self) -> &str {
        "ends_with_the_model"
    }

    fn compact<'a>(&'a self, mut overflow: Overflow<'a>) -> CompactFuture<'a> {
        assert!(overflow.error().contains("maximum context length"), "{}", overflow.error());
        let mut messages = overflow.take_messages();
        messages.truncate(2);
        Box::pin(std::future::ready(Ok(messages)))
    }
}

#[tokio::test(start_paused = true)]
async fn a_conversation_that_ends_with_the_model_is_refused() {
    let provider = three_pages_then([Scripted::ok("never")]);
    let runtime =
        Runtime::builder(provider.clone()).with_tools(pages()).with_compactor(EndsWithTheModel).build().unwrap();
    let error = runtime.exec("Read the pages.").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::ContextOverflow);
    assert!(error.attempt_errors()[0].contains("it returned a conversation that ends with a message of the model"));
}

/// A compactor that keeps only the prompt, rewritten: the user's own, named by the attribute.
struct Restart;

impl Compactor for Restart {
    fn name(&self) -> &str {
        "restart"
    }

    fn compact<'a>(&'a self, mut overflow: Overflow<'a>) -> CompactFuture<'a> {
        let first = overflow.take_messages().into_iter().next().map(|message| message.text());
        Box::pin(std::future::ready(Ok(vec![Message::user(format!("{} (start over)", first.unwrap_or_default()))])))
    }
}

static RESTART: Restart = Restart;

/// Read the manual.
#[agentic_function(max_retries = 2, compact = RESTART)]
async fn read_manual(runtime: &Runtime, task: &str) -> Result<String, ExecError> {
    Ok(runtime.exec(task).await?.into_text())
}

#[tokio::test(start_paused = true)]
async fn the_attribute_names_a_compactor_that_takes_precedence_over_the_runtimes() {
    let provider = three_pages_then([Scripted::ok("Done.")]);
    let runtime =
        Runtime::builder(provider.clone()).with_tools(pages()).with_compactor(DropOldest::keeping(1)).build().unwrap();
    assert_eq!(read_manual(&runtime, "Read the pages.").await.unwrap(), "Done.");
    assert_eq!(provider.requests()[4].messages, [Message::user("Read the pages. (start over)")]);
    assert_eq!(provider.requests()[4].function.as_deref(), Some("read_manual"));
}

/// A compactor in a `const`, with the built-ins' `const fn`s.
const KEEP_ONE: DropOldest = DropOldest::keeping(1);

#[agentic_function(compact = KEEP_ONE)]
async fn read_quickly(runtime: &Runtime, task: &str) -> Result<String, ExecError> {
    Ok(runtime.exec(task).await?.into_text())
}

#[tokio::test(start_paused = true)]
async fn the_attribute_takes_a_const_compactor_and_the_runtime_needs_none() {
    let provider = three_pages_then([Scripted::ok("Done.")]);
    let runtime = Runtime::builder(provider.clone()).with_tools(pages()).build().unwrap();
    assert_eq!(read_quickly(&runtime, "Read the pages.").await.unwrap(), "Done.");
    assert_eq!(provider.requests()[4].messages.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_rejected_answer_and_its_feedback_are_a_turn_to_drop() {
    // exec_json: the answer that did not parse and its feedback are dropped with the oldest turns.
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    struct Part {
        name: String,
    }
    let provider = ScriptedProvider::new([
        Scripted::ok("not json"),
        Scripted::ok("{\"nom\": 1}"),
        Scripted::http(400, OVERFLOW),
        Scripted::ok("{\"name\": \"A\"}"),
    ]);
    let runtime = Runtime::builder(provider.clone()).with_compactor(DropOldest::keeping(1)).build().unwrap();
    let part: Part = runtime.exec_json("Name the part.").await.unwrap();
    assert_eq!(part.name, "A");
    let last = &provider.requests()[3].messages;
    assert_eq!(roles(last), [Role::User, Role::Assistant, Role::User]);
    assert_eq!(last[1], Message::Assistant(AssistantMessage::text("{\"nom\": 1}")));
}

#[tokio::test(start_paused = true)]
async fn a_summary_of_a_typed_exec_is_asked_without_the_schema_and_the_turn_after_it_with() {
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    struct Part {
        name: String,
    }
    let provider = ScriptedProvider::new([
        Scripted::ok("not json"),
        Scripted::ok("still not json"),
        Scripted::http(400, OVERFLOW),
        Scripted::ok("The model twice answered with text instead of JSON."),
        Scripted::ok("{\"name\": \"A\"}"),
    ]);
    let runtime = Runtime::builder(provider.clone()).with_compactor(Summarize::keeping(1)).build().unwrap();
    let part: Part = runtime.exec_json("Name the part.").await.unwrap();
    assert_eq!(part.name, "A");
    let requests = provider.requests();
    assert!(requests[3].schema.is_none(), "the summary is text");
    assert!(requests[4].schema.is_some(), "the turn made again still asks for the JSON");
    assert_eq!(requests[4].messages.len(), 3);
}
