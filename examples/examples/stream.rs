//! An agent function that streams its answer, through a dropped stream and a 429.
//!
//! Starts the embedded chaos server on 127.0.0.1 (no API key, no network). The model's first
//! answer is cut after three chunks: what it showed is rewound (the stream says so, and why), and
//! the call is retried. The retry gets a 429 with `Retry-After: 1`: nothing of it was shown, so
//! there is nothing to rewind, only a wait. The third call streams the answer. Every event prints
//! as it comes: the text, the decisions, the rewind, the answer. Then the same faults with
//! `StreamMode::Buffer`: nothing is shown until a turn is accepted, so nothing is ever rewound.
//!
//! It exits non-zero if an exec fails, or if the text a consumer kept is not the reply's text.
//!
//! ```text
//! cargo run --example stream
//! ```

use std::io::Write as _;
use std::process::ExitCode;

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::decision::Decision;
use agentic_runtime::exec::{ExecEvent, ExecStream, StreamMode};
use agentic_runtime::provider::OpenAiProvider;
use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};
use futures_util::StreamExt as _;

/// Explain the question to a newcomer in two short sentences.
#[agentic_function(session_base_delay_ms = 100, exec_base_delay_ms = 150, budget_ms = 10_000, timeout_ms = 5_000)]
async fn explain(runtime: &Runtime, question: &str) -> Result<Reply, ExecError> {
    show(runtime.exec_stream(question)).await
}

/// Answer with one word.
#[agentic_function(session_base_delay_ms = 100, exec_base_delay_ms = 150, budget_ms = 10_000, timeout_ms = 5_000)]
async fn verdict(runtime: &Runtime, question: &str) -> Result<Reply, ExecError> {
    show(runtime.request(question).stream_mode(StreamMode::Buffer).stream()).await
}

/// Prints each event of `stream` as it comes, and returns what its last event, `Done`, carried:
/// exactly what `exec` would have returned.
async fn show(mut stream: ExecStream<'_>) -> Result<Reply, ExecError> {
    // The current model turn's text as shown: a rewind voids it, the next call's text replaces it.
    let mut shown = String::new();
    let mut in_text = false;
    while let Some(event) = stream.next().await {
        // Text goes on one line as it comes; any other event on a line of its own.
        if !matches!(event, ExecEvent::TextDelta(_)) && std::mem::take(&mut in_text) {
            println!();
        }
        match event {
            ExecEvent::TextDelta(text) => {
                if !std::mem::replace(&mut in_text, true) {
                    print!("  > ");
                }
                print!("{text}");
                std::io::stdout().flush().ok();
                shown.push_str(&text);
            }
            ExecEvent::Decision(decision) => print_decision(&decision),
            ExecEvent::Rewind { call, error, wait, .. } => {
                let next = wait.map_or_else(|| "at once".to_owned(), |wait| format!("in {} ms", wait.as_millis()));
                // The error is `"<Kind>: <text>"`; its decision, just above, has the whole text.
                let kind = error.split(':').next().unwrap_or_default();
                println!("  <- rewind: {shown:?} is void (call {call}: {kind}); the next call, {next}, replaces it");
                shown.clear();
            }
            ExecEvent::Done(outcome) => {
                // The consumer's side of the contract: what it kept is the answer.
                if let Ok(reply) = &outcome {
                    assert_eq!(shown, reply.text(), "the text kept, rewinds applied, is the answer");
                }
                return outcome;
            }
            // Tool calls, their results and reasoning: these functions have no tools.
            _ => {}
        }
    }
    unreachable!("an exec stream ends with `Done`")
}

fn print_decision(decision: &Decision) {
    let next = decision.delay().map_or_else(|| "stop".to_owned(), |delay| format!("wait {} ms", delay.as_millis()));
    println!(
        "  decision: {} layer, call {}: {} -> {} ({}), {next}",
        decision.layer().name(),
        decision.call(),
        decision.error(),
        decision.verdict(),
        decision.reason()
    );
}

const ANSWER: &str = "A stream shows the answer as the model writes it. When a call fails after showing \
                      text, a rewind voids that text and the next call replaces it, so what stays on \
                      screen is always the answer.";

fn print_outcome(outcome: &Result<Reply, ExecError>) {
    match outcome {
        Ok(reply) => println!("  answer after {} call(s) in {} ms\n", reply.calls(), reply.elapsed().as_millis()),
        Err(error) => println!("  {} error after {} call(s): {error}\n", error.kind(), error.calls()),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<ExitCode> {
    let scenario = Scenario::new()
        // explain: cut after three chunks, a 429, then the answer in a dozen chunks.
        .then(Step::drop_stream(3).text(ANSWER).chunks(12).chunk_delay_ms(40))
        .then(Step::http_error(429).retry_after_secs(1))
        .then(Step::ok(ANSWER).chunks(12).chunk_delay_ms(40))
        // verdict: the same cut, the answer.
        .then(Step::drop_stream(1).text("Replay, unless the answer is typed.").chunks(6))
        .then(Step::ok("Buffer."));
    let server = ChaosServer::start(scenario).await?;
    println!("chaos server on {} (no API key needed)", server.addr());
    let runtime = Runtime::new(OpenAiProvider::new(server.openai_base_url(), None));

    println!("\nexplain: runtime.exec_stream(..) replays after a rewind (StreamMode::Replay, the default)");
    let explained = explain(&runtime, "What does streaming with retries look like?").await;
    print_outcome(&explained);

    println!("verdict: StreamMode::Buffer shows a turn once it is accepted (the default with a schema)");
    let decided = verdict(&runtime, "Replay or buffer?").await;
    print_outcome(&decided);

    Ok(if explained.is_ok() && decided.is_ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
