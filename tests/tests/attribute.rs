//! `#[agentic_function]` end to end: the attribute's policy, name, doc comment, validator and spend
//! limits reach the runtime, wherever the `exec` call sits in the body.

use agentic_runtime::{ExecError, ExecErrorKind, Reply, Runtime, Scripted, ScriptedProvider, agentic_function};

fn failing(n: usize) -> Vec<Scripted> {
    (0..n).map(|_| Scripted::error("503 Service Unavailable")).collect()
}

fn functions(provider: &ScriptedProvider) -> Vec<Option<String>> {
    provider.requests().into_iter().map(|request| request.function).collect()
}

#[agentic_function(max_retries = 2, session_retries = 0)]
async fn two_calls(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[tokio::test(start_paused = true)]
async fn the_attributes_policy_is_the_one_applied() {
    let provider = ScriptedProvider::new(failing(3)).otherwise(Scripted::ok("late"));
    let runtime = Runtime::new(provider.clone());
    let error = two_calls(&runtime).await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Exhausted);
    assert_eq!(provider.calls(), 2);
    assert_eq!(error.function(), Some("two_calls"));

    // The same script through the runtime's defaults makes more calls (and gets through).
    let provider = ScriptedProvider::new(failing(3)).otherwise(Scripted::ok("late"));
    let runtime = Runtime::new(provider.clone());
    let reply = runtime.exec("hello").await.unwrap();
    assert_eq!(reply.text(), "late");
    assert_eq!(provider.calls(), 4);
}

/// Answer in one word.
#[agentic_function(max_retries = 2, session_retries = 0)]
async fn streamed(runtime: &Runtime) -> Vec<agentic_runtime::exec::ExecEvent> {
    use futures_util::StreamExt as _;
    let direct = runtime.exec_stream("hello");
    // And the request builder's stream, which runs as the function too.
    let built = runtime.request("again").stream();
    direct.chain(built).collect().await
}

#[tokio::test(start_paused = true)]
async fn a_streamed_exec_runs_as_the_function() {
    use agentic_runtime::exec::ExecEvent;
    // Each exec: two calls fail (the attribute's two attempts, no session retry), the default
    // policy would have made a third.
    let provider = ScriptedProvider::new(failing(4)).otherwise(Scripted::ok("late"));
    let runtime = Runtime::new(provider.clone());
    let events = streamed(&runtime).await;
    let done: Vec<&Result<Reply, ExecError>> =
        events.iter().filter_map(|event| if let ExecEvent::Done(done) = event { Some(done) } else { None }).collect();
    assert_eq!(done.len(), 2);
    for result in done {
        let error = result.as_ref().unwrap_err();
        assert_eq!((error.kind(), error.function()), (ExecErrorKind::Exhausted, Some("streamed")));
    }
    assert_eq!(provider.calls(), 4);
    let requests = provider.requests();
    assert!(requests.iter().all(|request| request.system.as_deref() == Some("Answer in one word.")));
    assert!(requests.iter().all(|request| request.function.as_deref() == Some("streamed")));
}

#[agentic_function(max_retries = 1, session_retries = 0)]
async fn one_call(runtime: Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[tokio::test(start_paused = true)]
async fn an_owned_runtime_parameter_works() {
    let provider = ScriptedProvider::new(failing(3));
    let error = one_call(Runtime::new(provider.clone())).await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Exhausted);
    assert_eq!(provider.calls(), 1);
}

#[agentic_function(max_calls = 3)]
async fn capped(rt: &mut agentic_runtime::Runtime) -> Result<Reply, ExecError> {
    rt.exec("hello").await
}

#[tokio::test(start_paused = true)]
async fn max_calls_caps_both_layers() {
    let provider = ScriptedProvider::new(failing(12));
    let mut runtime = Runtime::new(provider.clone());
    let error = capped(&mut runtime).await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert_eq!(provider.calls(), 3);
}

/// You are a careful assistant.
///
///   Keep answers short.
#[agentic_function]
async fn documented(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[tokio::test(start_paused = true)]
async fn the_doc_comment_is_the_system_instruction() {
    let provider = ScriptedProvider::new([Scripted::ok("hi")]);
    let runtime = Runtime::new(provider.clone());
    documented(&runtime).await.unwrap();
    let requests = provider.requests();
    assert_eq!(requests[0].system.as_deref(), Some("You are a careful assistant.\n\n  Keep answers short."));
    assert_eq!(requests[0].function.as_deref(), Some("documented"));
}

#[tokio::test(start_paused = true)]
async fn a_prompts_own_system_instruction_wins_over_the_doc_comment() {
    #[agentic_function]
    /// The doc comment.
    async fn own_system(runtime: &Runtime) -> Result<Reply, ExecError> {
        runtime.exec(agentic_runtime::exec::Prompt::from("hello").with_system("Mine.")).await
    }
    let provider = ScriptedProvider::new([Scripted::ok("hi")]);
    own_system(&Runtime::new(provider.clone())).await.unwrap();
    assert_eq!(provider.requests()[0].system.as_deref(), Some("Mine."));
}

#[agentic_function(max_retries = 1, session_retries = 0)]
async fn undocumented(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[tokio::test(start_paused = true)]
async fn without_a_doc_comment_no_system_instruction_is_sent() {
    let provider = ScriptedProvider::new([Scripted::ok("hi")]);
    undocumented(&Runtime::new(provider.clone())).await.unwrap();
    assert_eq!(provider.requests()[0].system, None);
    assert_eq!(provider.requests()[0].function.as_deref(), Some("undocumented"));
}

/// Nested.
#[agentic_function(max_retries = 1, session_retries = 0)]
async fn nested(runtime: &Runtime) -> Result<Vec<String>, ExecError> {
    let mut texts = Vec::new();
    {
        let inner = runtime.exec("in a block").await?;
        texts.push(inner.into_text());
    }
    let in_async_block = async { runtime.exec("in an async block").await };
    texts.push(in_async_block.await?.into_text());
    let make = |prompt: &'static str| runtime.exec(prompt);
    texts.push(make("in a closure").await?.into_text());
    if true {
        let futures = [runtime.exec("in an if"), runtime.exec("twice")];
        for future in futures {
            texts.push(future.await?.into_text());
        }
    }
    let fut = runtime.exec("bound first");
    texts.push(fut.await?.into_text());
    let (a, b) = tokio::join!(runtime.exec("joined a"), runtime.exec("joined b"));
    texts.push(a?.into_text());
    texts.push(b?.into_text());
    assert!(runtime.exec("in assert!").await.is_ok());
    Ok(texts)
}

#[tokio::test(start_paused = true)]
async fn nested_exec_calls_are_rewritten() {
    let provider = ScriptedProvider::new([]).otherwise(Scripted::ok("ok"));
    let runtime = Runtime::new(provider.clone());
    let texts = nested(&runtime).await.unwrap();
    assert_eq!(texts.len(), 8);
    let requests = provider.requests();
    assert_eq!(requests.len(), 9);
    for request in &requests {
        assert_eq!(request.function.as_deref(), Some("nested"), "{:?}", request.messages);
        assert_eq!(request.system.as_deref(), Some("Nested."));
    }
}

/// A type with an `exec` of its own.
struct Shell {
    ran: std::cell::Cell<u32>,
}

impl Shell {
    fn exec(&self, _command: &str) -> u32 {
        self.ran.set(self.ran.get() + 1);
        self.ran.get()
    }
}

#[agentic_function]
async fn other_receivers(runtime: &Runtime, shell: &Shell) -> Result<Option<String>, ExecError> {
    assert_eq!(shell.exec("ls"), 1);
    let plain = runtime.clone();
    let reply = plain.exec("not rewritten").await?;
    {
        let runtime = Shell { ran: std::cell::Cell::new(10) };
        assert_eq!(runtime.exec("shadowed by let"), 11);
    }
    let run = |runtime: &Shell| runtime.exec("shadowed by a closure parameter");
    assert_eq!(run(shell), 2);
    if let Some(runtime) = Some(shell) {
        assert_eq!(runtime.exec("shadowed by if let"), 3);
    }
    let rewritten = runtime.exec("rewritten").await?;
    assert_eq!(rewritten.text(), "second");
    Ok(Some(reply.into_text()))
}

#[tokio::test(start_paused = true)]
async fn calls_on_other_receivers_are_untouched() {
    let provider = ScriptedProvider::new([Scripted::ok("first"), Scripted::ok("second")]);
    let runtime = Runtime::new(provider.clone());
    let shell = Shell { ran: std::cell::Cell::new(0) };
    assert_eq!(other_receivers(&runtime, &shell).await.unwrap().as_deref(), Some("first"));
    assert_eq!(functions(&provider), [None, Some("other_receivers".to_owned())]);
}

fn short(reply: &Reply) -> Result<(), String> {
    if reply.text().len() <= 5 { Ok(()) } else { Err(format!("{} characters is too long", reply.text().len())) }
}

/// Answer briefly.
#[agentic_function(max_retries = 3, session_retries = 0, validate = short)]
async fn brief(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[tokio::test(start_paused = true)]
async fn validate_retries_with_the_reason_as_feedback() {
    let provider = ScriptedProvider::new([Scripted::ok("far too long"), Scripted::ok("short")]);
    let runtime = Runtime::new(provider.clone());
    let reply = brief(&runtime).await.unwrap();
    assert_eq!(reply.text(), "short");
    assert_eq!(provider.calls(), 2);
    let second = provider.requests()[1].messages.iter().map(|message| message.text()).collect::<Vec<_>>().join("\n");
    assert!(second.contains("12 characters is too long"), "{second}");
    assert_eq!(provider.requests()[1].system.as_deref(), Some("Answer briefly."));
}

#[tokio::test(start_paused = true)]
async fn validate_ends_in_invalid_result_when_every_reply_is_rejected() {
    let provider = ScriptedProvider::new([]).otherwise(Scripted::ok("always too long"));
    let runtime = Runtime::new(provider.clone());
    let error = brief(&runtime).await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::InvalidResult);
    assert_eq!(provider.calls(), 3);
    assert!(error.to_string().contains("15 characters is too long"), "{error}");
}

/// An error type that is `Display` but not `String`.
#[derive(Debug)]
struct NotJson;

impl std::fmt::Display for NotJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the reply is not a JSON object")
    }
}

struct Agent {
    greeting: &'static str,
}

impl Agent {
    fn check(reply: &Reply) -> Result<(), NotJson> {
        if reply.text().starts_with('{') { Ok(()) } else { Err(NotJson) }
    }

    /// Reply in JSON.
    #[agentic_function(max_retries = 2, session_retries = 0, validate = Self::check)]
    async fn ask(&self, runtime: &Runtime) -> Result<Reply, ExecError> {
        runtime.exec(self.greeting).await
    }

    #[agentic_function(max_retries = 1, session_retries = 0)]
    async fn ask_mut(&mut self, runtime: &Runtime) -> Result<Reply, ExecError> {
        self.greeting = "changed";
        runtime.exec(self.greeting).await
    }
}

#[tokio::test(start_paused = true)]
async fn methods_on_self_work_and_validate_may_name_self() {
    let provider = ScriptedProvider::new([Scripted::ok("plain text"), Scripted::ok("{}")]);
    let runtime = Runtime::new(provider.clone());
    let mut agent = Agent { greeting: "hi" };
    assert_eq!(agent.ask(&runtime).await.unwrap().text(), "{}");
    let requests = provider.requests();
    assert_eq!(requests[0].function.as_deref(), Some("ask"));
    assert_eq!(requests[0].system.as_deref(), Some("Reply in JSON."));
    assert!(requests[1].messages.iter().any(|message| message.text().contains("the reply is not a JSON object")));

    provider.push([Scripted::ok("done")]);
    assert_eq!(agent.ask_mut(&runtime).await.unwrap().text(), "done");
    assert_eq!(provider.requests()[2].function.as_deref(), Some("ask_mut"));
}

trait Assistant {
    async fn answer(&self, runtime: &Runtime, question: &str) -> Result<Reply, ExecError>;
}

struct Echo;

impl Assistant for Echo {
    #[agentic_function(max_retries = 1, session_retries = 0)]
    async fn answer(&self, runtime: &Runtime, question: &str) -> Result<Reply, ExecError> {
        runtime.exec(question).await
    }
}

#[tokio::test(start_paused = true)]
async fn trait_impl_methods_work() {
    let provider = ScriptedProvider::new(failing(1));
    let error = Echo.answer(&Runtime::new(provider.clone()), "q").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Exhausted);
    assert_eq!(provider.calls(), 1);
    assert_eq!(functions(&provider), [Some("answer".to_owned())]);
}

#[agentic_function(max_retries = 2, session_retries = 0)]
async fn generic<'a, P>(runtime: &'a Runtime, prompts: impl IntoIterator<Item = P>) -> Result<Vec<String>, ExecError>
where
    P: Into<agentic_runtime::exec::Prompt> + 'a,
{
    let mut texts = Vec::new();
    for prompt in prompts {
        texts.push(runtime.exec(prompt).await?.into_text());
    }
    Ok(texts)
}

#[tokio::test(start_paused = true)]
async fn generic_functions_with_impl_trait_arguments_work() {
    let provider =
        ScriptedProvider::new([Scripted::ok("a"), Scripted::error("503 Service Unavailable"), Scripted::ok("b")]);
    let runtime = Runtime::new(provider.clone());
    let texts = generic(&runtime, ["x".to_owned(), "y".to_owned()]).await.unwrap();
    assert_eq!(texts, ["a", "b"]);
    assert_eq!(functions(&provider), vec![Some("generic".to_owned()); 3]);
}

#[tokio::test(start_paused = true)]
async fn spawned_futures_are_send_and_static() {
    #[agentic_function(max_retries = 1, session_retries = 0)]
    async fn owned(runtime: Runtime, prompt: String) -> Result<Reply, ExecError> {
        runtime.exec(prompt).await
    }
    let provider = ScriptedProvider::new([Scripted::ok("spawned")]);
    let handle = tokio::spawn(owned(Runtime::new(provider.clone()), "x".to_owned()));
    assert_eq!(handle.await.unwrap().unwrap().text(), "spawned");
    assert_eq!(functions(&provider), [Some("owned".to_owned())]);
}

#[test]
fn the_attribute_knows_every_jitter_kind() {
    // `macros/src/attr.rs` lists the kinds the attribute accepts (`JITTER_KINDS`); `ui/pass/free-fn.rs`
    // uses each of them. A kind added to the runtime must be added there too.
    assert_eq!(agentic_runtime::policy::Jitter::NAMES, ["none", "full", "equal", "decorrelated", "proportional"]);
}

fn search(runs: std::sync::Arc<std::sync::atomic::AtomicU32>) -> agentic_runtime::Toolbox {
    agentic_runtime::Toolbox::new().with_fn("search", "Searches.", serde_json::json!(null), move |_| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok("found".to_owned())
        }
    })
}

/// Look it up.
#[agentic_function(max_tool_calls = 1)]
async fn one_search(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("Look it up.").await
}

/// Look it up.
#[agentic_function(max_retries = 2)]
async fn any_searches(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("Look it up.").await
}

#[tokio::test(start_paused = true)]
async fn the_functions_max_tool_calls_stops_its_second_tool_call() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use agentic_runtime::spend::{Limit, UsageLimits};
    use agentic_runtime::storm::Refusal;
    use serde_json::json;

    let script = || {
        ScriptedProvider::new([
            Scripted::tool_call("search", json!({"q": "a"})),
            Scripted::tool_call("search", json!({"q": "b"})),
            Scripted::ok("done"),
        ])
    };
    // The runtime allows five tool calls; the function, one.
    let runtime = |provider: &ScriptedProvider, runs: &Arc<AtomicU32>| {
        Runtime::builder(provider.clone())
            .with_tools(search(runs.clone()))
            .with_usage_limits(UsageLimits::new().with_max_tool_calls(5))
            .build()
            .unwrap()
    };

    let (provider, runs) = (script(), Arc::new(AtomicU32::new(0)));
    let error = one_search(&runtime(&provider, &runs)).await.unwrap_err();
    assert_eq!((error.kind(), error.function()), (ExecErrorKind::UsageLimit, Some("one_search")), "{error}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the second tool call never ran");
    assert_eq!(provider.calls(), 2, "the answer after it was never asked for");
    assert!(
        matches!(
            error.refusal(),
            Some(Refusal::UsageLimit { limit: Limit::MaxToolCalls, max: 1, used: 1, needed: 1, .. })
        ),
        "{error:?}"
    );

    // Without limit keys the function has the runtime's: both tool calls run.
    let (provider, runs) = (script(), Arc::new(AtomicU32::new(0)));
    let reply = any_searches(&runtime(&provider, &runs)).await.unwrap();
    assert_eq!(reply.text(), "done");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(reply.spent().unwrap().tool_calls, 2);
}
