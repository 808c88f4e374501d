//! The peak memory of one tool turn that runs away: a model that asks for thousands of tool calls
//! at once, or a tool that returns a huge result. The tool loop runs 128 calls of a turn (the
//! rest are answered with an error saying why), at most 10 at once, sends the model at most
//! 256 KiB of a result and writes trace lines of at most 1 MiB; this shows what that bounds.
//!
//! Each shape runs in a process of its own (this example started again with `--tool-calls N` or
//! `--result-mib N`), against the scripted provider (the model's turn is streamed to the runtime
//! as a provider's would be), with a JSONL trace written to a temporary file. It prints the
//! process's peak resident memory (Linux's `VmHWM`), what the model was sent and the trace's size.
//!
//! ```text
//! cargo run --example runaway_turn                        # 10 000 and 40 000 calls, a 100 MiB result
//! cargo run --example runaway_turn -- --tool-calls 10000  # one shape, in this process
//! cargo run --example runaway_turn -- --result-mib 100
//! ```

use std::process::{Command, ExitCode};

use agentic_runtime::message::ContentBlock;
use agentic_runtime::message::Message;
use agentic_runtime::observe::trace::TraceSink;
use agentic_runtime::{Runtime, Scripted, ScriptedProvider, Toolbox};
use serde_json::json;

/// One runaway turn.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// The model asks for this many calls of `work` in one turn.
    ToolCalls(usize),
    /// The model asks for one call of `read`, which returns this many MiB of text.
    ResultMib(usize),
}

/// The process's peak resident set size in MiB, from `/proc/self/status` (Linux only).
fn peak_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// The bytes of the tool results in `messages`.
fn result_bytes(messages: &[Message]) -> usize {
    let blocks = messages.iter().flat_map(|message| match message {
        Message::User { content } => content.as_slice(),
        _ => &[],
    });
    blocks
        .map(|block| match block {
            ContentBlock::ToolResult { content, .. } => content.len(),
            _ => 0,
        })
        .sum()
}

/// Runs `shape` in this process and prints its line.
async fn run(shape: Shape) -> Result<(), String> {
    let (provider, tools) = match shape {
        Shape::ToolCalls(calls) => {
            let provider = ScriptedProvider::new([
                Scripted::tool_calls((0..calls).map(|n| ("work", json!({"n": n})))),
                Scripted::ok("Done with what ran."),
            ]);
            let tools = Toolbox::new()
                .with_fn("work", "Works.", json!({"type": "object"}), |_| async { Ok("done".to_owned()) });
            (provider, tools)
        }
        Shape::ResultMib(mib) => {
            let provider =
                ScriptedProvider::new([Scripted::tool_calls([("read", json!({}))]), Scripted::ok("Read it.")]);
            let tools =
                Toolbox::new().with_fn("read", "Reads everything.", json!({"type": "object"}), move |_| async move {
                    Ok("x".repeat(mib << 20))
                });
            (provider, tools)
        }
    };
    let path = std::env::temp_dir().join(format!("agentic-runaway-turn-{}.jsonl", std::process::id()));
    let trace = TraceSink::to_file(&path).map_err(|error| format!("cannot create {}: {error}", path.display()))?;
    let runtime = Runtime::builder(provider.clone()).with_tools(tools).with_trace(trace).build().unwrap();
    let reply = runtime.exec("Do everything.").await.map_err(|error| format!("the exec failed: {error}"))?;
    let peak = peak_mib();
    let trace_bytes = std::fs::metadata(&path).map(|metadata| metadata.len()).unwrap_or(0);
    let _ = std::fs::remove_file(&path);
    let sent = provider.requests().get(1).map_or(0, |request| result_bytes(&request.messages));
    let shape = match shape {
        Shape::ToolCalls(calls) => format!("{calls} tool calls in one turn"),
        Shape::ResultMib(mib) => format!("a {mib} MiB tool result"),
    };
    println!(
        "{shape:<32} peak {:>4} MiB   results sent to the model {:>5.2} MiB   trace {:>5.2} MiB   answer: {}",
        peak.map_or_else(|| "?".to_owned(), |peak| format!("{peak:.0}")),
        sent as f64 / f64::from(1 << 20),
        trace_bytes as f64 / f64::from(1 << 20),
        reply.text()
    );
    Ok(())
}

/// `--tool-calls N` or `--result-mib N`: one shape; nothing: every shape, each in a child process.
fn shape() -> Result<Option<Shape>, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(None),
        [flag, value] => {
            let number: usize = value.parse().map_err(|_| format!("{flag} {value}: a whole number"))?;
            match flag.as_str() {
                "--tool-calls" => Ok(Some(Shape::ToolCalls(number))),
                "--result-mib" => Ok(Some(Shape::ResultMib(number))),
                _ => Err(format!("unknown flag {flag}; the flags are --tool-calls N and --result-mib N")),
            }
        }
        _ => Err("give one of --tool-calls N and --result-mib N, or nothing for every shape".to_owned()),
    }
}

fn main() -> ExitCode {
    let shape = match shape() {
        Ok(shape) => shape,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let Some(shape) = shape else {
        let Ok(me) = std::env::current_exe() else {
            eprintln!("error: cannot find this program to run each shape in a process of its own");
            return ExitCode::FAILURE;
        };
        for args in [["--tool-calls", "10000"], ["--tool-calls", "40000"], ["--result-mib", "100"]] {
            match Command::new(&me).args(args).status() {
                Ok(status) if status.success() => {}
                outcome => {
                    eprintln!("error: {} {}: {outcome:?}", args[0], args[1]);
                    return ExitCode::FAILURE;
                }
            }
        }
        return ExitCode::SUCCESS;
    };
    let tokio = match tokio::runtime::Builder::new_current_thread().enable_time().build() {
        Ok(tokio) => tokio,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match tokio.block_on(run(shape)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
