//! A provider that fails 30 % of requests with a 5xx and says `Retry-After: 1`: how many calls the
//! default policy answers, with how many requests and in how long.
//!
//! Each run starts a chaos server whose scenario is a seeded random sequence (`--seed`): each
//! request is a `503` with `Retry-After: 1` with probability `--errors` % (on Anthropic's wire half
//! of those are `529`, its "overloaded"), else an answer. One `Runtime` with the default policy
//! makes `--calls` execs one after another, on the wall clock (the waits are real: about a second
//! per fault). It prints, per run, the calls answered, the requests the server journaled and the
//! time of the whole run.
//!
//! ```text
//! cargo run --release --example retry_after                       # both wires, seeds 1 and 2 (about 2 min)
//! cargo run --release --example retry_after -- --wire anthropic --seed 3 --calls 20
//! ```

use std::process::ExitCode;
use std::time::Instant;

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::Runtime;
use agentic_runtime::provider::{AnthropicProvider, OpenAiProvider};

/// One run's settings.
#[derive(Debug, Clone, Copy)]
struct Run {
    anthropic: bool,
    seed: u64,
    calls: u32,
    errors: u8,
}

/// The seeded scenario: for each of `calls * 12` requests (the most the default policy can make),
/// a fault with `Retry-After: 1` with probability `errors` %, else `ok`; `ok` after that.
fn scenario(run: Run) -> Scenario {
    let mut rng = fastrand::Rng::with_seed(run.seed);
    let mut scenario = Scenario::new().otherwise(Step::ok("fine"));
    for _ in 0..run.calls * 12 {
        let step: Step = if rng.u8(0..100) < run.errors {
            let status = if run.anthropic && rng.bool() { 529 } else { 503 };
            Step::http_error(status).retry_after_secs(1).into()
        } else {
            Step::ok("fine").into()
        };
        scenario = scenario.then(step);
    }
    scenario
}

/// Runs `run` and prints its line; `Err` if the server could not start.
async fn measure(run: Run) -> Result<(), String> {
    let server = ChaosServer::start(scenario(run)).await.map_err(|error| format!("the chaos server: {error}"))?;
    let runtime = if run.anthropic {
        Runtime::new(AnthropicProvider::new(server.anthropic_base_url(), None))
    } else {
        Runtime::new(OpenAiProvider::new(server.openai_base_url(), None))
    };
    let start = Instant::now();
    let mut answered = 0;
    for index in 0..run.calls {
        answered += u32::from(runtime.exec(format!("call {index}")).await.is_ok());
    }
    let elapsed = start.elapsed();
    let wire = if run.anthropic { "Anthropic Messages" } else { "Chat Completions" };
    println!(
        "{wire:<18} {:>4} {:>9} {:>8} {:>7.1} s",
        run.seed,
        format!("{answered} / {}", run.calls),
        server.journal().len(),
        elapsed.as_secs_f64()
    );
    Ok(())
}

/// The runs the flags ask for: `--wire openai|anthropic`, `--seed N`, `--calls N`, `--errors PCT`.
fn runs() -> Result<Vec<Run>, String> {
    let (mut wires, mut seeds, mut calls, mut errors) = (vec![false, true], vec![1, 2], 50, 30);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |what: &str| format!("{flag} {value}: {what}");
        match flag.as_str() {
            "--wire" => {
                wires = match value.as_str() {
                    "openai" => vec![false],
                    "anthropic" => vec![true],
                    _ => return Err(bad("the wire is `openai` or `anthropic`")),
                }
            }
            "--seed" => seeds = vec![value.parse().map_err(|_| bad("a seed is a whole number"))?],
            "--calls" => calls = value.parse().map_err(|_| bad("the calls are a whole number"))?,
            "--errors" => {
                errors =
                    value.parse().ok().filter(|percent| *percent <= 100).ok_or_else(|| bad("a percentage, 0 to 100"))?
            }
            _ => return Err(format!("unknown flag {flag}; the flags are --wire, --seed, --calls, --errors")),
        }
    }
    Ok(wires
        .into_iter()
        .flat_map(|anthropic| seeds.iter().map(move |&seed| Run { anthropic, seed, calls, errors }))
        .collect())
}

#[tokio::main]
async fn main() -> ExitCode {
    let runs = match runs() {
        Ok(runs) => runs,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    if let Some(run) = runs.first() {
        println!(
            "{} % of requests fail with Retry-After: 1; {} execs one after another, the default policy",
            run.errors, run.calls
        );
    }
    println!("{:<18} {:>4} {:>9} {:>8} {:>9}", "wire", "seed", "answered", "requests", "time");
    for run in runs {
        if let Err(error) = measure(run).await {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
