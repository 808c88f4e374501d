//! One agent function over every wire the runtime speaks, against the embedded chaos server (no API
//! key, no network).
//!
//! For each wire of `WireKind::ALL` (Chat Completions, Anthropic Messages, and any wire added to the
//! registry), a chaos server plays the same scenario in that wire's own bytes: a 429 with a
//! `retry-after-ms` hint, a stream dropped mid-way, then an answer. The same `#[agentic_function]`
//! runs through a provider of that wire; the example prints the layers' decisions, the answer and,
//! from the server's journal, the wire that served each request. It exits non-zero if any wire
//! fails to answer, or a request reached the server on another wire than the provider's.
//!
//! ```text
//! cargo run --example four_wires
//! ```

use agentic_runtime::exec::RuntimeBuilder;
use std::process::ExitCode;

use agentic_chaos::{ChaosServer, Scenario, Step, WireFormat};
use agentic_runtime::decision::Decision;
use agentic_runtime::provider::WireKind;
use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

/// Answer the user's question in one sentence.
#[agentic_function(session_base_delay_ms = 50, exec_base_delay_ms = 50, budget_ms = 10_000, timeout_ms = 5_000)]
async fn answer(runtime: &Runtime, question: &str) -> Result<Reply, ExecError> {
    runtime.exec(question).await
}

/// The same faults on every wire: each is transient, so the answer comes on the third request.
fn scenario() -> Scenario {
    Scenario::new()
        .then(Step::http_error(429).retry_after_ms(200))
        .then(Step::drop_stream(2))
        .otherwise(Step::ok("The same answer, whichever wire carried it."))
}

fn print_decision(decision: &Decision) {
    let delay = decision.delay().map_or_else(|| "stop".to_owned(), |delay| format!("wait {} ms", delay.as_millis()));
    println!(
        "    {} call {}: {} -> {}, {delay}",
        decision.layer().name(),
        decision.call(),
        decision.error(),
        decision.verdict()
    );
}

/// Runs the function over `kind` against its own chaos server; `Err` says what went wrong.
async fn run_wire(kind: WireKind) -> Result<(), String> {
    // The chaos server's registry names the same wires: a wire it does not speak is a failure here.
    let format = WireFormat::from_name(kind.name())
        .ok_or_else(|| format!("the chaos server speaks no wire named `{}`", kind.name()))?;
    let server = ChaosServer::start(scenario()).await.map_err(|error| format!("the chaos server: {error}"))?;
    let provider = kind.provider(server.base_url(format), None, None);
    println!("{} ({}), {}", kind.name(), provider.name(), kind.summary());
    let runtime = RuntimeBuilder::from_shared(provider).with_observer(print_decision).build().unwrap();
    let outcome = answer(&runtime, "Which wire is this?").await;

    println!("    journal:");
    let journal = server.journal();
    for entry in &journal {
        let wire = entry.wire.map_or("-", WireFormat::name);
        println!("      #{} {} {}  wire {wire}", entry.seq, entry.method, entry.path);
    }
    let reply = outcome.map_err(|error| format!("no answer: {error}"))?;
    println!("    answer after {} calls: {}\n", reply.calls(), reply.text().trim());
    if let Some(entry) = journal.iter().find(|entry| entry.wire != Some(format)) {
        return Err(format!("request #{} reached the server as {:?}, not {}", entry.seq, entry.wire, kind.name()));
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    println!("scenario on each wire: a 429 with retry-after-ms 200, a stream dropped mid-way, then an answer\n");
    let mut failed = Vec::new();
    for &kind in WireKind::ALL {
        if let Err(why) = run_wire(kind).await {
            println!("    FAILED: {why}\n");
            failed.push(kind.name());
        }
    }
    if failed.is_empty() {
        println!("every wire answered ({} wires)", WireKind::ALL.len());
        ExitCode::SUCCESS
    } else {
        eprintln!("wires that did not answer: {}", failed.join(", "));
        ExitCode::FAILURE
    }
}
