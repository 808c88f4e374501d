//! The main job: two agent functions meet a misbehaving model API and show what each layer does.
//!
//! Starts the embedded chaos server on 127.0.0.1 (no API key, no network) with a scenario that
//! answers `summarize` with a 429 carrying a Retry-After, a stream dropped mid-way, a 503 and
//! finally an answer, and answers `translate` with an invalid-key error, which is permanent: it
//! fails at once. Every decision of either layer prints as it is made: the layer, the call, the
//! error, the verdict, the rule that decided and the delay before the next call.
//!
//! With `OPENAI_API_KEY` (or `ANTHROPIC_API_KEY`) set, the same functions run against the real
//! provider instead, and the quickstart says so.
//!
//! ```text
//! cargo run --example quickstart
//! ```

use agentic_runtime::exec::RuntimeBuilder;
use std::sync::Arc;

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::decision::Decision;
use agentic_runtime::decision::Layer;
use agentic_runtime::provider::{AnthropicProvider, OpenAiProvider, Provider};
use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

/// Summarize the user's text in one sentence.
#[agentic_function(session_base_delay_ms = 100, exec_base_delay_ms = 150, budget_ms = 10_000, timeout_ms = 5_000)]
async fn summarize(runtime: &Runtime, text: &str) -> Result<Reply, ExecError> {
    runtime.exec(format!("Summarize in one sentence: {text}")).await
}

/// Translate the user's text to French. Answer with the translation only.
#[agentic_function(max_retries = 2, session_retries = 1, session_base_delay_ms = 100, exec_base_delay_ms = 100)]
async fn translate(runtime: &Runtime, text: &str) -> Result<Reply, ExecError> {
    runtime.exec(text).await
}

const TEXT: &str = "Retries are for transient failures: a rate limit, an overloaded server, a dropped \
                    stream. A bad key or a prompt that is too long fails the same way every time.";

fn print_decision(decision: &Decision) {
    let delay = decision.delay().map_or_else(|| "stop".to_owned(), |delay| format!("wait {} ms", delay.as_millis()));
    match decision.layer() {
        // Layer 2 judges the failure layer 1 just printed: its verdict only, not the error again.
        Layer::Exec => println!("             exec:    -> {} ({}), {delay}", decision.verdict(), decision.reason()),
        _ => println!(
            "  {:>6.3} s  call {}  {}\n             session: -> {} ({}), {delay}",
            decision.at().as_secs_f64(),
            decision.call(),
            decision.error(),
            decision.verdict(),
            decision.reason(),
        ),
    }
}

fn print_outcome(outcome: Result<Reply, ExecError>) {
    match outcome {
        Ok(reply) => println!(
            "  answer after {} call(s) in {} ms: {}\n",
            reply.calls(),
            reply.elapsed().as_millis(),
            reply.text().trim()
        ),
        Err(error) => {
            println!("  {} error after {} call(s) in {} ms:", error.kind(), error.calls(), error.elapsed().as_millis());
            // Its first line: the attempts it lists are the failures printed above.
            let text = error.to_string();
            println!(
                "    {} (each attempt's error is above)\n",
                text.lines().next().unwrap_or_default().trim_end_matches(':')
            );
        }
    }
}

/// The real provider when a key is set, else `None`.
fn real_provider() -> Option<(Arc<dyn Provider>, &'static str)> {
    let set = |name: &str| std::env::var(name).is_ok_and(|value| !value.is_empty());
    if set("OPENAI_API_KEY") {
        return OpenAiProvider::from_env().ok().map(|p| (Arc::new(p) as Arc<dyn Provider>, "OPENAI_API_KEY"));
    }
    if set("ANTHROPIC_API_KEY") {
        return AnthropicProvider::from_env().ok().map(|p| (Arc::new(p) as Arc<dyn Provider>, "ANTHROPIC_API_KEY"));
    }
    None
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mut chaos = None;
    let provider = match real_provider() {
        Some((provider, variable)) => {
            println!("{variable} is set: running against the real {} API\n", provider.name());
            provider
        }
        None => {
            let scenario = Scenario::new()
                .then(Step::http_error(429).retry_after_ms(300))
                .then(Step::drop_stream(3))
                .then(Step::http_error(503))
                .then(Step::ok(
                    "Retry what is transient, stop at once on what is permanent, and bound it all by one budget.",
                ))
                .then(Step::invalid_api_key());
            let server = ChaosServer::start(scenario).await?;
            println!("chaos server on {} (no API key needed; set OPENAI_API_KEY to use the real API)", server.addr());
            println!(
                "scenario: 429 with Retry-After 300 ms, a dropped stream, a 503, an answer; then an invalid key\n"
            );
            let provider: Arc<dyn Provider> = Arc::new(OpenAiProvider::new(server.openai_base_url(), None));
            chaos = Some(server);
            provider
        }
    };
    let runtime = RuntimeBuilder::from_shared(provider).with_observer(print_decision).build().unwrap();

    println!(
        "Two layers judge each failed model call: `session` (layer 1) retries the call itself on a \
         transient error; `exec` (layer 2) retries the whole attempt, or stops at once on a permanent \
         error.\n"
    );
    println!("summarize (session_base_delay_ms = 100, exec_base_delay_ms = 150, budget_ms = 10000)");
    print_outcome(summarize(&runtime, TEXT).await);

    println!("translate (max_retries = 2, session_retries = 1)");
    print_outcome(translate(&runtime, "Good morning").await);

    if let Some(server) = chaos {
        println!("the chaos server's journal:");
        for entry in server.journal() {
            let step = entry.step.map_or_else(|| "-".to_owned(), |step| format!("{:?}", step.kind));
            println!(
                "  {:>5} ms  {} {}  call {}  answered by {step}",
                entry.at_ms,
                entry.method,
                entry.path,
                entry.agentic_call.as_deref().unwrap_or("-"),
            );
        }
    }
    Ok(())
}
