//! A tool that fails twice with "RateLimitError: 429", then works (docs/design.md §13): the errors
//! go back to the model as `tool_result`s with `is_error: true`, with no infrastructure retry and no
//! sleep; the model calls the tool again; the JSONL trace shows it, and `agentic grade` calls the
//! run recovered.
//!
//! ```text
//! cargo run --example flaky_tool
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use agentic_runtime::observe::trace::{TraceEvent, TraceSink};
use agentic_runtime::{ExecError, Reply, Runtime, Scripted, ScriptedProvider, ToolError, Toolbox, agentic_function};
use serde_json::json;

/// Answer questions about the weather, using the `get_weather` tool.
#[agentic_function(max_retries = 2)]
async fn weather(runtime: &Runtime, question: &str) -> Result<Reply, ExecError> {
    runtime.exec(question).await
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() -> std::io::Result<()> {
    let calls = Arc::new(AtomicU32::new(0));
    let tools = Toolbox::new().with_fn(
        "get_weather",
        "The current weather in a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        move |input| {
            let calls = Arc::clone(&calls);
            async move {
                if calls.fetch_add(1, Ordering::SeqCst) < 2 {
                    // Looks like an infrastructure error, but it is the tool's: the model decides.
                    return Err(ToolError::new("RateLimitError: 429 Too Many Requests"));
                }
                Ok(format!("18 °C and sunny in {}", input["city"].as_str().unwrap_or("?")))
            }
        },
    );
    // The model: asks for the weather, asks again after each error, then answers.
    let provider = ScriptedProvider::new([
        Scripted::tool_call("get_weather", json!({"city": "Paris"})),
        Scripted::tool_call("get_weather", json!({"city": "Paris"})),
        Scripted::tool_call("get_weather", json!({"city": "Paris"})),
        Scripted::ok("It is 18 °C and sunny in Paris."),
    ]);
    let path = std::env::temp_dir().join(format!("agentic-flaky-tool-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let runtime = Runtime::builder(provider).with_tools(tools).with_trace(TraceSink::to_file(&path)?).build().unwrap();

    match weather(&runtime, "What is the weather in Paris?").await {
        Ok(reply) => println!(
            "answer after {} tool turns, {} model calls, {} infrastructure retries: {}\n",
            reply.iterations(),
            reply.calls(),
            reply.decisions().len(),
            reply.text()
        ),
        Err(error) => println!("failed: {error}\n"),
    }

    let trace = std::fs::read_to_string(&path)?;
    println!("the trace ({}):", path.display());
    for line in trace.lines() {
        println!("  {line}");
    }
    let events = TraceEvent::parse_all(&trace).map_err(std::io::Error::other)?;
    let results: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            TraceEvent::ToolResult { is_error, .. } => Some(if *is_error { "error" } else { "ok" }),
            _ => None,
        })
        .collect();
    println!("\nthe tool's results, in order: {}", results.join(", "));
    println!(
        "`agentic grade` calls the run tool_error_recovered: cargo run -p agentic-cli -- grade {}",
        path.display()
    );
    Ok(())
}
