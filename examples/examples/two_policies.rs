//! Two agent functions on one runtime, each with its own policy, checked when it compiles.
//!
//! `summarize` is patient: three exec attempts of up to three calls each, inside a 60 s budget.
//! `label` must answer fast: no session retry, two attempts, and a validator that rejects any
//! reply that is not one of the labels (the reason goes back to the model with the next attempt).
//! Both meet the same outage; `summarize` waits it out, `label` gives up after two calls.
//!
//! Runs against the scripted provider on paused time: the backoff is real in the timeline
//! (virtual seconds), instant on the wall clock.
//!
//! ```text
//! cargo run --example two_policies
//! ```

use agentic_runtime::{ExecError, Reply, Runtime, Scripted, ScriptedProvider, agentic_function};

/// Summarize the user's text in one sentence.
#[agentic_function(max_retries = 3, session_retries = 2, budget_ms = 60_000)]
async fn summarize(runtime: &Runtime, text: &str) -> Result<Reply, ExecError> {
    runtime.exec(text).await
}

const LABELS: [&str; 3] = ["billing", "bug", "question"];

fn one_label(reply: &Reply) -> Result<(), String> {
    if LABELS.contains(&reply.text().trim()) {
        Ok(())
    } else {
        Err(format!("answer with exactly one of {}", LABELS.join(", ")))
    }
}

/// Label the support ticket: billing, bug or question. Answer with the label only.
#[agentic_function(max_retries = 2, session_retries = 0, exec_base_delay_ms = 500, validate = one_label)]
async fn label(runtime: &Runtime, ticket: &str) -> Result<String, ExecError> {
    Ok(runtime.exec(ticket).await?.into_text())
}

fn show(outcome: Result<String, ExecError>, provider: &ScriptedProvider, calls_before: usize) {
    match outcome {
        Ok(text) => println!("  ok: {text}"),
        Err(error) => {
            println!("  {} error after {} calls in {:?}:", error.kind(), error.calls(), error.elapsed());
            for line in error.to_string().lines() {
                println!("    {line}");
            }
        }
    }
    let requests = provider.requests();
    let new = &requests[calls_before..];
    println!("  calls made: {}", new.len());
    if let Some(first) = new.first() {
        println!("  system instruction (the doc comment): {:?}", first.system.as_deref().unwrap_or(""));
    }
    println!();
}

fn timeline(reply: &Reply) -> String {
    let mut text = format!("{} after {} calls in {:?}", reply.text(), reply.calls(), reply.elapsed());
    for decision in reply.decisions() {
        text.push_str(&format!("\n    {decision}"));
    }
    text
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let provider = ScriptedProvider::new([
        // 1. summarize through a short outage: layer 1 retries after about 2 s and 4 s.
        Scripted::error("503 Service Unavailable"),
        Scripted::http(429, "Too Many Requests"),
        Scripted::ok("Retries belong to infrastructure; tool errors belong to the model."),
        // 2. label: a chatty reply is rejected, the model is told why, the next reply is a label.
        Scripted::ok("This looks like a billing problem to me."),
        Scripted::ok("billing"),
        // 3. label during an outage: two calls, then it gives up.
        Scripted::error("503 Service Unavailable"),
        Scripted::error("503 Service Unavailable"),
        // 4. summarize during the same outage: it waits it out.
        Scripted::error("503 Service Unavailable"),
        Scripted::error("503 Service Unavailable"),
        Scripted::error("503 Service Unavailable"),
        Scripted::ok("Layered retries multiply; bound them with a budget."),
    ]);
    let runtime = Runtime::new(provider.clone());
    let text = "A long article about retry layers...";

    println!("1. summarize, after a 503 and a 429");
    let before = provider.calls();
    show(summarize(&runtime, text).await.map(|reply| timeline(&reply)), &provider, before);

    println!("2. label, whose first reply is not a label");
    let before = provider.calls();
    show(label(&runtime, "I was charged twice this month.").await, &provider, before);
    let feedback = provider.requests()[before + 1].messages.last().map(|message| message.text()).unwrap_or_default();
    println!("  what the model was told on the second attempt: {feedback:?}\n");

    println!("3. label during an outage: two calls, then it gives up");
    let before = provider.calls();
    show(label(&runtime, "The app crashes on start.").await, &provider, before);

    println!("4. summarize during the same outage: it waits it out");
    let before = provider.calls();
    show(summarize(&runtime, text).await.map(|reply| timeline(&reply)), &provider, before);
}
