//! The main job: an agent call that survives two transient failures, and one that fails fast.
//!
//! Runs against the scripted provider (no API key, no network): the first call hits a 429 with a
//! Retry-After hint and a dropped stream, then succeeds; the second hits an invalid key and stops
//! at once. Every failure prints the layer that saw it, its verdict, the rule that decided and the
//! delay before the next call.
//!
//! ```text
//! cargo run --example quickstart
//! ```

use std::time::Duration;

use agentic_runtime::{Decision, RetryPolicy, Runtime, ScriptedProvider, Step};

/// Short delays so the demo finishes in about a second; the defaults are 2 s / 4 s / 8 s and 1.5 s / 3 s.
const POLICY: RetryPolicy = RetryPolicy::new().with_session_base_delay_ms(200).with_exec_base_delay_ms(150);

fn print_timeline(decisions: &[Decision]) {
    for decision in decisions {
        let delay = decision.delay.map_or_else(|| "-".to_owned(), |d| format!("{} ms", d.as_millis()));
        println!(
            "  call {:>2}  {:<7}  {:<40}  {:<17} delay {:>7}  ({})",
            decision.call,
            decision.layer.name(),
            decision.error,
            decision.verdict.name(),
            delay,
            decision.reason
        );
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let provider = ScriptedProvider::new([
        Step::http(429, "Too Many Requests").with_retry_after(Duration::from_millis(300)),
        Step::error(""), // the stream dropped before any error text arrived
        Step::ok("Retries are for transient failures; a bad key fails at once."),
        Step::http(401, "Incorrect API key provided"),
    ]);
    let runtime = Runtime::new(provider.clone());

    println!("1. summarize: a rate limit and a dropped stream, then an answer");
    match runtime.exec_with(&POLICY, "Summarize the retry policy in one sentence.").await {
        Ok(reply) => {
            print_timeline(reply.decisions());
            println!(
                "  answer after {} calls in {} ms: {}\n",
                reply.calls(),
                reply.elapsed().as_millis(),
                reply.text()
            );
        }
        Err(error) => println!("  unexpected failure: {error}\n"),
    }

    println!("2. translate: an invalid key is permanent, so no retry is made");
    match runtime.exec_with(&POLICY, "Translate 'hello' to French.").await {
        Ok(reply) => println!("  unexpected answer: {reply}"),
        Err(error) => {
            print_timeline(error.decisions());
            println!("  error ({}, after {} call): {error}", error.kind(), error.calls());
        }
    }
    println!("\nmodel calls made: {}", provider.calls());
}
