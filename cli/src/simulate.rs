//! `agentic simulate`: the real retry layers (`Runtime::exec_with` over a `ScriptedProvider`) on
//! tokio's paused clock, so a run with 46.5 s of backoff answers at once.

use std::io;
use std::process::ExitCode;
use std::time::Duration;

use agentic_runtime::decision::Decision;
use agentic_runtime::policy::Jitter;
use agentic_runtime::policy::rules::{Key, PolicyValues, format_ms, millis};
use agentic_runtime::provider::ModelError;
use agentic_runtime::{ExecError, Reply, RetryPolicy, Runtime, Scripted, ScriptedProvider};
use serde::Serialize;
use serde_json::Value;

use crate::input::{USAGE, emit, emit_text, hint_if_terminal, read_stdin_to_string, usage_error};
use crate::json::{Fields, describe, nearest};
use crate::terminal::shown;

/// The help text of `agentic simulate`.
pub(crate) const LONG_ABOUT: &str = "\
Run the real retry layers against scripted model calls, on a virtual clock: a run with 46.5 s of \
backoff answers at once.

stdin is one JSON document of at most 1 MiB (more is a usage error: stdin that never ends is not \
read into memory):

  {\"policy\": {..}, \"outcomes\": [..]}

\"policy\" (optional; every key optional, null = left out) takes the attribute's keys: \
max_retries, session_retries, session_base_delay_ms, exec_base_delay_ms, max_delay_ms, \
jitter (\"none\"|\"full\"|\"equal\"|\"decorrelated\"|\"proportional\", default \"proportional\"), \
max_calls, timeout_ms, budget_ms, retry_after_cap_ms, connect_timeout_ms, headers_timeout_ms, \
first_token_timeout_ms, idle_timeout_ms, turn_timeout_ms, max_answer_bytes; and \"seed\" for the \
jitter RNG (default 0, so a run replays exactly; \"jitter\": \"none\" gives the exact schedules).

\"outcomes\" (required): each model call consumes the next one; after the list every call \
answers \"ok\".
  \"ok\"                             the call answers
  {\"error_message\": str}           the call ends in an error message with this text, as it is
  {\"raise\": \"TypeError: ..\"}       the call raises this error while streaming: TypeError and
                                   NotImplementedError are programming errors, returned at once;
                                   any other kind becomes an error message \"<Kind>: <text>\"
  {\"hang\": true}                   the call never answers: the policy's bounds end it (by default
                                   the first token's 300 s, within the model turn's 900 s)
  {\"latency_ms\": int}              the call answers after that long
An error_message or raise outcome may add \"status\" (HTTP status, 100 to 599), \"retry_after_ms\" \
(the server's Retry-After), \"should_retry\" (x-should-retry), \"code\" (the provider's error code) \
and \"latency_ms\" (the time before it fails).

--json prints one line:

  {\"calls\": int, \"sleeps_ms\": [int..], \"outcome\": \"ok\"|\"error\", \"error_kind\"?: str,
   \"error\"?: str, \"elapsed_ms\": int}

calls counts model calls across both layers; sleeps_ms are the backoff sleeps taken, in order \
(whole milliseconds); error_kind (permanent, exhausted, programming, context_overflow, budget) and \
error (the exec error's text) come with outcome \"error\"; elapsed_ms is virtual time. Without \
--json the same run is reported for people, one line per decision of either layer.

Exit status: 0 when the simulation ran (whatever its outcome); 2 for bad input: not JSON, an \
unknown field (the nearest valid name is suggested), a wrong type, an unknown outcome shape, \
or a policy that breaks a rule (then stderr \
holds exactly the message #[agentic_function] gives at compile time, one line per broken rule).";

/// Arguments of `agentic simulate`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Print one JSON result line instead of a readable report.
    #[arg(long)]
    json: bool,
}

/// A parsed simulation: the policy, the jitter seed and the script.
struct Simulation {
    policy: RetryPolicy,
    seed: u64,
    steps: Vec<Scripted>,
}

/// Why a simulation cannot run.
enum Refusal {
    /// Bad input, with what is wrong.
    Usage(String),
    /// The policy breaks rules; the messages are the attribute's, one per broken rule.
    Policy(Vec<String>),
}

/// The `--json` output line, in the contract's field order.
#[derive(Debug, Serialize)]
struct Report {
    calls: u32,
    sleeps_ms: Vec<u64>,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    elapsed_ms: u64,
}

/// Runs `agentic simulate`.
pub(crate) fn run(args: &Args) -> ExitCode {
    hint_if_terminal("a simulation as JSON: {\"policy\": {..}, \"outcomes\": [..]}");
    let text = match read_stdin_to_string() {
        Ok(text) => text,
        Err(problem) => return usage_error(problem),
    };
    let simulation = match parse(&text) {
        Ok(simulation) => simulation,
        Err(Refusal::Usage(problem)) => return usage_error(problem),
        Err(Refusal::Policy(messages)) => {
            for message in messages {
                eprintln!("{}", shown(message));
            }
            return ExitCode::from(USAGE);
        }
    };
    let policy = simulation.policy;
    let result = match play(simulation) {
        Ok(result) => result,
        Err(problem) => {
            eprintln!("error: {}", shown(problem));
            return ExitCode::FAILURE;
        }
    };
    let mut out = io::stdout().lock();
    if args.json {
        let report = serde_json::to_string(&report(&result)).expect("the report serializes");
        emit(&mut out, report);
    } else {
        emit_text(&mut out, readable(&policy, &result));
    }
    ExitCode::SUCCESS
}

/// Runs the script through `Runtime::exec_with` on a paused current-thread runtime.
fn play(simulation: Simulation) -> Result<Result<Reply, ExecError>, String> {
    let clock = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|error| format!("cannot start the virtual clock: {error}"))?;
    let provider = ScriptedProvider::new(simulation.steps).otherwise(Scripted::ok("ok"));
    let runtime = Runtime::builder(provider).with_jitter_seed(simulation.seed).build().unwrap();
    Ok(clock.block_on(runtime.request("simulate").policy(&simulation.policy).send()))
}

fn report(result: &Result<Reply, ExecError>) -> Report {
    let (calls, decisions, elapsed) = facts(result);
    let sleeps_ms = decisions.iter().filter_map(|decision| decision.delay()).map(millis).collect();
    let (outcome, error_kind, error) = match result {
        Ok(_) => ("ok", None, None),
        Err(error) => ("error", Some(error.kind().name()), Some(error.to_string())),
    };
    Report { calls, sleeps_ms, outcome, error_kind, error, elapsed_ms: millis(elapsed) }
}

fn facts(result: &Result<Reply, ExecError>) -> (u32, &[Decision], Duration) {
    match result {
        Ok(reply) => (reply.calls(), reply.decisions(), reply.elapsed()),
        Err(error) => (error.calls(), error.decisions(), error.elapsed()),
    }
}

/// The run for people: the policy's worst case, each decision, the outcome.
fn readable(policy: &RetryPolicy, result: &Result<Reply, ExecError>) -> String {
    let (calls, decisions, elapsed) = facts(result);
    let mut lines = vec![format!("policy: {}", policy.describe_worst_case())];
    lines.extend(decisions.iter().map(Decision::to_string));
    let sleeps: Vec<String> =
        decisions.iter().filter_map(|decision| decision.delay()).map(|delay| millis(delay).to_string()).collect();
    let slept = if sleeps.is_empty() { "no sleeps".to_owned() } else { format!("sleeps {} ms", sleeps.join(", ")) };
    let cost = format!(
        "{calls} model call{}, {slept}, {} elapsed",
        if calls == 1 { "" } else { "s" },
        format_ms(millis(elapsed))
    );
    match result {
        Ok(reply) => lines.push(format!("outcome: ok after {cost}; reply: {reply}")),
        Err(error) => {
            lines.push(format!("outcome: error ({}) after {cost}", error.kind().name()));
            lines.push(error.to_string());
        }
    }
    lines.join("\n")
}

/// Reads the simulation, or says why it cannot run.
fn parse(text: &str) -> Result<Simulation, Refusal> {
    let usage = Refusal::Usage;
    let value: Value =
        serde_json::from_str(text).map_err(|error| usage(format!("stdin is not valid JSON: {error}")))?;
    let top = Fields::of(&value, "", "stdin").map_err(usage)?;
    top.only(&["policy", "outcomes"]).map_err(usage)?;
    let (policy, seed) = match top.get("policy") {
        None => (RetryPolicy::new(), 0),
        Some(policy) => parse_policy(policy).map_err(usage)?,
    };
    let outcomes = match top.get("outcomes") {
        None => {
            return Err(usage(
                "missing field \"outcomes\" (an array of outcomes, one per model call; [] means every call answers \"ok\")"
                    .to_owned(),
            ));
        }
        Some(Value::Array(outcomes)) => outcomes,
        Some(other) => return Err(usage(top.wrong("outcomes", "an array", other))),
    };
    let mut steps = Vec::with_capacity(outcomes.len());
    for (index, outcome) in outcomes.iter().enumerate() {
        steps.push(parse_outcome(index, outcome).map_err(usage)?);
    }
    let broken = policy.violations();
    if !broken.is_empty() {
        return Err(Refusal::Policy(broken.iter().map(ToString::to_string).collect()));
    }
    Ok(Simulation { policy, seed, steps })
}

/// The policy and the jitter seed.
fn parse_policy(value: &Value) -> Result<(RetryPolicy, u64), String> {
    let fields = Fields::of(value, "policy.", "\"policy\"")?;
    let mut names: Vec<&str> = Key::ALL.iter().map(|key| key.name()).collect();
    names.push("seed");
    fields.only(&names)?;
    let mut values = PolicyValues::DEFAULT;
    for key in Key::ALL.into_iter().filter(|key| *key != Key::Jitter) {
        if let Some(value) = fields.uint(key.name(), 0, key.max_value())? {
            values.set(key, value);
        }
    }
    let mut policy = RetryPolicy::from_values(values);
    if let Some(name) = fields.str(Key::Jitter.name())? {
        policy = policy.with_jitter(parse_jitter(name)?);
    }
    let seed = fields.uint("seed", 0, u64::MAX)?.unwrap_or(0);
    Ok((policy, seed))
}

fn parse_jitter(name: &str) -> Result<Jitter, String> {
    Jitter::from_name(name).ok_or_else(|| {
        let mut message = format!("unknown \"policy.jitter\" {}", Value::String(name.to_owned()));
        if let Some(nearest) = nearest(name, &Jitter::NAMES) {
            message.push_str(&format!("; did you mean \"{nearest}\"?"));
        }
        let names: Vec<String> = Jitter::NAMES.iter().map(|name| format!("\"{name}\"")).collect();
        message.push_str(&format!(" (valid: {})", names.join(", ")));
        message
    })
}

/// The fields an outcome object may have.
const OUTCOME_FIELDS: [&str; 8] =
    ["error_message", "raise", "hang", "latency_ms", "status", "retry_after_ms", "should_retry", "code"];

/// The typed facts a failing outcome may carry.
const TYPED: [&str; 4] = ["status", "retry_after_ms", "should_retry", "code"];

/// The fields that choose an outcome's shape.
const SHAPES: [&str; 3] = ["error_message", "raise", "hang"];

/// The forms an outcome may take, for messages.
const OUTCOME_SHAPES: &str =
    "\"ok\", {\"error_message\": str, ..}, {\"raise\": str, ..}, {\"hang\": true} or {\"latency_ms\": int}";

/// One outcome as a scripted step.
fn parse_outcome(index: usize, value: &Value) -> Result<Scripted, String> {
    let place = format!("outcomes[{index}]");
    let object = match value {
        Value::String(text) if text == "ok" => return Ok(Scripted::ok("ok")),
        Value::Object(_) => value,
        other => {
            return Err(format!("\"{place}\" must be one of {OUTCOME_SHAPES}; found {}", describe(other)));
        }
    };
    let prefix = format!("{place}.");
    let fields = Fields::of(object, &prefix, &place)?;
    fields.only(&OUTCOME_FIELDS)?;
    let chosen: Vec<&str> = SHAPES.iter().copied().filter(|key| fields.has(key)).collect();
    let latency = fields.uint("latency_ms", 0, u64::MAX)?.map(Duration::from_millis);
    let step = match chosen.as_slice() {
        [] => return answering_outcome(&fields, &place, latency),
        ["hang"] => return hang_outcome(&fields),
        ["error_message"] => Scripted::error(fields.required_str("error_message")?),
        [_raise] => Scripted::raise(ModelError::parse(fields.required_str("raise")?)),
        [first, second, ..] => {
            return Err(format!(
                "\"{place}\" has both {} and {}; an outcome is one of {OUTCOME_SHAPES}",
                fields.name(first),
                fields.name(second)
            ));
        }
    };
    with_failure_facts(step, &fields, latency)
}

/// An outcome object without a shape: an answer after `latency_ms`, which must be there.
fn answering_outcome(fields: &Fields<'_>, place: &str, latency: Option<Duration>) -> Result<Scripted, String> {
    if let Some(typed) = TYPED.iter().find(|key| fields.has(key)) {
        return Err(format!(
            "{} applies to a failure; add \"error_message\" or \"raise\" to \"{place}\"",
            fields.name(typed)
        ));
    }
    match latency {
        Some(latency) => Ok(Scripted::ok("ok").with_latency(latency)),
        None => Err(format!("\"{place}\" must be one of {OUTCOME_SHAPES}; found an empty object")),
    }
}

/// `{"hang": true}`, alone: a hang never answers or fails, so nothing else applies.
fn hang_outcome(fields: &Fields<'_>) -> Result<Scripted, String> {
    if fields.bool("hang")? != Some(true) {
        return Err(format!("{} must be true (leave the outcome out for a call that answers)", fields.name("hang")));
    }
    if let Some(other) = OUTCOME_FIELDS.iter().find(|key| **key != "hang" && fields.has(key)) {
        return Err(format!("{} does not go with a hang, which never answers or fails", fields.name(other)));
    }
    Ok(Scripted::hang())
}

/// A failing step with the typed facts the outcome gives (status, retry-after, should-retry, code)
/// and its latency.
fn with_failure_facts(mut step: Scripted, fields: &Fields<'_>, latency: Option<Duration>) -> Result<Scripted, String> {
    if let Some(status) = fields.status("status")? {
        step = step.with_status(status);
    }
    if let Some(wait) = fields.uint("retry_after_ms", 0, u64::MAX)? {
        step = step.with_retry_after(Duration::from_millis(wait));
    }
    if let Some(should_retry) = fields.bool("should_retry")? {
        step = step.with_should_retry(should_retry);
    }
    if let Some(code) = fields.str("code")? {
        step = step.with_code(code);
    }
    if let Some(latency) = latency {
        step = step.with_latency(latency);
    }
    Ok(step)
}
