//! `agentic`: classify model errors, simulate the two retry layers of `agentic-runtime`, ask a model.
//!
//! The contracts of `agentic classify --json` and `agentic simulate --json` are fixed by docs/design.md
//! §18; scripts depend on them. Exit codes, for every command:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | `classify`: at least one input line was malformed (with `--json`, each got an `{"error": ..}` line); `ask`: the exec failed, or a `--trace` / `--journal` record could not be written; `grade`: graded, but malformed lines were skipped |
//! | 2 | usage error: bad arguments, bad input JSON, an invalid policy, input that cannot be read (a line with no end within 64 MiB, as `/dev/zero` gives) (message on stderr) |

mod ask;
mod ask_json;
mod chaos;
mod classify;
mod fallback_flags;
mod grade;
mod input;
mod journal;
mod json;
mod lines;
mod otel;
mod pacing_flags;
mod policy_flags;
mod progress;
mod schema;
mod simulate;
mod spend_flags;
mod stream;
mod target_key;
mod terminal;
mod text;
mod tool_flags;
mod wire_flags;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "agentic",
    version,
    about = "Resilient LLM model calls: classify errors, simulate the retry layers, ask a model, serve chaos, grade traces, count failures",
    long_about = "Resilient LLM model calls: classify errors, simulate the two retry layers, ask a model \
        through them, serve a fault-injecting server (chaos), grade agent traces and count journaled failures.\n\n\
        Exit codes: 0 done; 1 `classify` met a malformed input line, `ask`'s exec failed or its --trace / \
        --journal record could not be written, or `grade` skipped malformed lines; 2 usage error \
        (bad arguments, bad input, an invalid policy, input that cannot be read or never ends a line; \
        the message is on stderr).",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Show how both retry layers judge an error message, and why.
    #[command(long_about = classify::LONG_ABOUT)]
    Classify(classify::Args),
    /// Run the real retry layers against scripted model calls on a virtual clock.
    #[command(long_about = simulate::LONG_ABOUT)]
    Simulate(simulate::Args),
    /// Send one prompt to a model through both retry layers.
    #[command(long_about = ask::LONG_ABOUT, after_long_help = otel::HELP)]
    Ask(Box<ask::Args>),
    /// Serve a fault-injecting server of the four model wires (Chat Completions, Anthropic Messages,
    /// Gemini, OpenAI Responses) until stopped.
    #[command(long_about = chaos::LONG_ABOUT)]
    Chaos(chaos::Args),
    /// Grade JSONL agent traces: unreadable, incomplete, tool_error_unrecovered, tool_error_recovered, clean.
    #[command(long_about = grade::LONG_ABOUT)]
    Grade(grade::Args),
    /// Count the failures in a failure journal file by function, kind and cause.
    #[command(long_about = journal::LONG_ABOUT)]
    Journal(journal::Args),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Classify(args) => classify::run(&args),
        Command::Simulate(args) => simulate::run(&args),
        Command::Ask(args) => ask::run(&args),
        Command::Chaos(args) => chaos::run(&args),
        Command::Grade(args) => grade::run(&args),
        Command::Journal(args) => journal::run(&args),
    }
}
