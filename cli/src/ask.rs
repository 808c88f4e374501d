//! `agentic ask`: one exec against a real provider (or any compatible server), through both layers.

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::sync::Arc;

use agentic_runtime::exec::{Prompt, RuntimeBuilder};
use agentic_runtime::observe::journal::Journal;
use agentic_runtime::observe::trace::TraceSink;
use agentic_runtime::provider::WireKind;
use agentic_runtime::spend::Limit;
use agentic_runtime::{ExecError, Reply};

use crate::ask_json::JsonOutcome;
use crate::fallback_flags::FallbackFlags;
use crate::input::usage_error;
use crate::otel::Telemetry;
use crate::pacing_flags::PacingFlags;
use crate::policy_flags::PolicyFlags;
use crate::progress::Progress;
use crate::schema::SchemaFile;
use crate::spend_flags::{SpendFlags, spent_line};
use crate::stream::screen::Screen;
use crate::stream::{Output, follow};
use crate::target_key::{KeyOwner, Target, TargetKey, target_key};
use crate::terminal::shown;
use crate::tool_flags::{self, ToolFlags};
use crate::wire_flags::{Whose, check_base_url, is_default_base_url, provider_parser};

/// The help text of `agentic ask`.
pub(crate) const LONG_ABOUT: &str = "\
Send one prompt through both retry layers and print the answer.

The provider is --provider, or openai when --base-url, OPENAI_API_KEY or OPENAI_BASE_URL is set, \
else anthropic when ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL is set, else gemini when GEMINI_API_KEY, \
GOOGLE_API_KEY or GEMINI_BASE_URL is set. The base URL comes from --base-url or OPENAI_BASE_URL / \
ANTHROPIC_BASE_URL / GEMINI_BASE_URL, else the provider's own API. The key comes from --api-key, or \
the variable --api-key-env VAR names (the key stays off the command line), else from OPENAI_API_KEY / \
ANTHROPIC_API_KEY / GEMINI_API_KEY (then GOOGLE_API_KEY), which goes only to the origin (scheme, host \
and port; the path does not matter) of the base URL it is paired with: the wire's *_BASE_URL \
variable, or the provider's own API when that is unset. A --base-url on another origin gets no key \
from them, so a local server or a gateway never receives your provider's key unasked. A server of \
your own (vLLM, Ollama, llama.cpp, `agentic chaos`) needs no key.

Prints the answer on stdout (exit 0), or the exec error on stderr (exit 1); a --trace or --journal \
record that could not be written is exit 1 too, its path and cause on stderr, after the answer. \
--json prints one line {\"answer\": str, \"calls\": int, \"elapsed_ms\": int, \"usage\": {..}, \
\"attempts\": [..]} (on failure: \"error\" and \"error_kind\" instead of \"answer\"), usage being the \
tokens of every call the server reported them for, failed ones included ({\"input_tokens\": int, \"output_tokens\": int}, with \
cache_read_input_tokens and cache_creation_input_tokens when reported), one attempt per decision of \
either layer with its layer, call, error, verdict, reason and delay_ms; with a spend limit, \
\"spent\": {\"input_tokens\", \"output_tokens\", \"total_tokens\", \"tool_calls\", \"cost_usd\"}, and on a \
failure of kind usage_limit \"limit\": {\"limit\": \"max_total_tokens\", \"max\", \"used\", \"needed\"} (dollars \
for max_cost_usd). On a terminal, one line on \
stderr says what the exec is waiting for and why (\"ServiceUnavailableError: 503 ...; retrying in \
2.1 s (session layer, retry 2 of 3)\"), rewritten at each retry and cleared before the answer; \
--quiet (-q) leaves it out, and it is never written to a pipe or a file. --verbose prints each decision \
on stderr as it is made instead, and the tokens spent at the end; a wait for a cooldown another call's \
server asked for is a decision too (verdict cooled_down), and so is a wait for the server's rate \
limit (verdict paced).

Streaming: --stream writes the answer as it arrives when stdout is a terminal. When a call that \
showed text fails and another replaces it (a retry, a fallback), what it showed is erased (the \
cursor goes back up the rows the turn wrote, wrapped lines counted from the terminal's width, else \
COLUMNS, else 80, and the rest of the screen is cleared) and one line on stderr says why \
(\"agentic: rewound: call 2 (attempt 1) failed after its text was shown (StreamDroppedError: ...); \
retrying in 1.2 s\", with \"on <target>\" when it moves to another target); an exec that fails \
erases what its last call showed, and prints its error as without --stream. The --verbose lines \
and the progress line wait while a call's text is on the screen. With --json: one JSON object per \
line and per event, each flushed: {\"event\": \"text_delta\", \"text\": str}, \"reasoning_delta\" \
(text), \"tool_call\" (id, name, arguments), \"tool_result\" (id, name, content, is_error), \
\"decision\" (the fields of an attempt above), \"rewind\" (attempt, call, error, and wait_ms and \
target when there is one: all shown since the current model turn began is void), and last \
\"done\" with the fields --json prints. On a pipe or a file without --json, only the answer, at the \
end (text written there cannot be taken back). With --schema, the answer comes in one piece, once \
it passed. The exit codes are those without --stream.

Rate limits: the calls are paced by the limits the server's rate-limit headers state (OpenAI's \
x-ratelimit-*, Anthropic's anthropic-ratelimit-*): a call waits until the requests and tokens it \
needs are there, when that fits before --budget-ms, and fails with kind refused, naming the limit and \
when it is full again, when it does not. --rpm and --tpm give the limits before any header is seen; \
--no-pacing sends every call at once. Exit 2 for bad input (a missing key, an \
invalid policy, a --schema file over 1 MiB).

Spend limits: --max-input-tokens, --max-output-tokens, --max-total-tokens, --max-tool-calls and \
--max-cost-usd (with --prices FILE, litellm's model_prices_and_context_window.json, which must price \
every target) bound the whole exec, failed calls included. Each call reserves its worst case first \
(its estimated input and one output token) and is not sent when that cannot fit what is left: the \
exec fails with kind usage_limit, naming the limit, what was spent and what the call needed; a call \
asks for no more output tokens than are left. A tool turn that would pass --max-tool-calls runs none \
of its calls. When limits are set, one line on stderr at the end says what was spent against each \
(\"spent: 160 of --max-total-tokens 10000, $0.002000 of --max-cost-usd 0.01\"; not with --json or \
--quiet). A zero or negative limit, a prices file that cannot be read, and a dollar limit over a \
target the prices do not price are exit 2.

Fallbacks: --fallback-provider P --fallback-base-url URL [--fallback-model M], repeatable, are the \
targets the exec moves to, in order; the n-th --fallback-base-url and --fallback-model go with the \
n-th --fallback-provider (give a --fallback-model for each fallback, or for none: each then asks for \
its wire's default model), and a count that does not match is a usage error. A fallback's key is \
the one held by the variable the n-th --fallback-api-key-env VAR names (one for each fallback, or \
none; \"\" for a fallback that names none; a variable that is not set is a usage error), else its \
wire's (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY) under the same origin \
rule, else none: --api-key and --api-key-env are the primary's, and a key is never given to a \
fallback on the command line. When the exec fails and a wire's variable held a key that a target \
was not sent, a note on stderr says so. The exec moves to the next target at once, without \
sleeping, when the target's circuit breaker is open (at least half of at least 20 calls in 10 s \
failed; it stays open 30 s, then lets one probe through), when its cooldown or Retry-After is longer \
than --retry-after-cap-ms or the time left, when its retry quota is empty, on its own permanent \
errors (its key refused, its quota spent, its model not found, a redirect, a refused certificate, a \
200 that is not an answer), and when layer 1 has used its --session-retries on a transient failure; \
it stays on a Retry-After within the cap and the time left, and on a transient failure with retries \
left, and never moves on a 400 or 422, a rejected --schema answer, or --max-calls and --budget-ms, \
which are the whole exec's. Each target is tried at most once, forward; the last keeps layer 2's \
retries. Each move is an attempt with verdict fallback (with --verbose, a line \"fallback: `a` ... \
→ `b`\"), and --json adds \"target\": \"<provider>/<model>\", the target that answered (on failure, \
that of the last attempt), only when fallbacks are given.

Tools: --mcp \"CMD ARGS...\" (repeatable) starts an MCP server over stdio (the command line split \
as a shell would) and offers its tools to the model; a tool name two servers have is offered from \
the first. Each turn that asks for tools runs them and sends the results back, a tool's error \
included, for the model to act on: a tool error is never retried by the layers. A call past \
--tool-timeout-ms (default 120000) is cancelled (the server is sent MCP's cancel) and the model \
is told; a call whose server exited while it ran is not sent again (its outcome is unknown, and \
the model is told so). --max-iterations (default 20) bounds the tool turns; past it the exec fails \
with kind max_iterations. --verbose prints each tool call and its result on stderr as it happens. \
--trace FILE appends the run's JSONL trace, for `agentic grade FILE`; --journal FILE appends the \
exec's failure and every retry decision, for `agentic journal FILE`. A server that cannot be \
started, or does not answer initialize within 30 s, is exit 2, naming it.

Control characters in what is printed for people (the answer, the error, the --verbose decisions) \
other than newline and tab are escaped (ESC as \\u{1b}, CR as \\r), so that a server's or a \
model's text cannot set the terminal's title, write its clipboard or rewrite a line; --json keeps \
the exact text, in JSON's escapes.";

/// `agentic ask` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The wire format [default: see below].
    #[arg(long, value_parser = provider_parser())]
    provider: Option<WireKind>,
    /// The API's base URL, e.g. http://127.0.0.1:8080/v1.
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The model name [default: the provider's].
    #[arg(long, value_name = "M")]
    model: Option<String>,
    /// The API key [default: from the environment; see below].
    #[arg(long, value_name = "K")]
    api_key: Option<String>,
    /// The name of the environment variable holding the API key (keeps the key off the command line).
    #[arg(long, value_name = "VAR", conflicts_with = "api_key")]
    api_key_env: Option<String>,
    /// A system instruction.
    #[arg(long, value_name = "TEXT")]
    system: Option<String>,
    /// Print one JSON line instead of the answer.
    #[arg(long)]
    json: bool,
    /// Write the answer as it arrives on a terminal (a retried attempt's text is erased, and one
    /// line on stderr says why); with --json, one JSON line per event; on a pipe or a file, only
    /// the answer, at the end.
    #[arg(long)]
    stream: bool,
    /// Print each decision of the layers on stderr as it is made.
    #[arg(long, short)]
    verbose: bool,
    /// Print nothing on stderr while the exec waits (on a terminal, one line says what it waits
    /// for and why, rewritten at each retry and cleared at the end).
    #[arg(long, short, conflicts_with = "verbose")]
    quiet: bool,
    /// Ask for JSON that this JSON Schema file accepts, and print it once it does (an answer that
    /// is not such JSON goes back to the model with what is wrong, like a rejected reply).
    #[arg(long, value_name = "FILE.json")]
    schema: Option<std::path::PathBuf>,
    #[command(flatten)]
    policy: PolicyFlags,
    #[command(flatten)]
    fallbacks: FallbackFlags,
    #[command(flatten)]
    pacing: PacingFlags,
    #[command(flatten)]
    spend: SpendFlags,
    #[command(flatten)]
    tools: ToolFlags,
    /// Write the run's JSONL trace (agent_start, each tool_call and tool_result, agent_finish) to
    /// FILE, appending, for `agentic grade FILE`.
    #[arg(long, value_name = "FILE")]
    trace: Option<std::path::PathBuf>,
    /// Record the exec's failure, if it fails, and every retry decision as JSON lines in FILE,
    /// appending, for `agentic journal FILE`.
    #[arg(long, value_name = "FILE")]
    journal: Option<std::path::PathBuf>,
    /// The prompt.
    prompt: String,
}

/// Runs `agentic ask`, with its spans and metrics exported as the environment says (flushed
/// on every way out, before the exit code is returned).
pub(crate) fn run(args: &Args) -> ExitCode {
    let telemetry = match Telemetry::start() {
        Ok(telemetry) => telemetry,
        Err(code) => return code,
    };
    let code = ask(args);
    telemetry.finish();
    code
}

fn ask(args: &Args) -> ExitCode {
    let policy = args.policy.policy();
    if let Err(error) = policy.validate() {
        return usage_error(error);
    }
    let pacing = match args.pacing.pacing() {
        Ok(pacing) => pacing,
        Err(error) => return usage_error(error),
    };
    let limits = match args.spend.limits() {
        Ok(limits) => limits,
        Err(message) => return usage_error(message),
    };
    let prices = match args.spend.prices() {
        Ok(prices) => prices,
        Err(message) => return usage_error(message),
    };
    let schema = match args.schema.as_deref().map(SchemaFile::load).transpose() {
        Ok(schema) => schema,
        Err(message) => return usage_error(message),
    };
    let env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    let targets = build_provider(args, &env).and_then(|primary| Ok((primary, args.fallbacks.targets(&env)?)));
    let (primary, fallbacks) = match targets {
        Ok(targets) => targets,
        Err(message) => return usage_error(message),
    };
    let withheld: Vec<String> =
        std::iter::once(&primary).chain(&fallbacks).filter_map(|target| target.withheld.clone()).collect();
    let (mcp, tool_timeout) = match args.tools.mcp_commands().and_then(|mcp| Ok((mcp, args.tools.tool_timeout()?))) {
        Ok(tools) => tools,
        Err(message) => return usage_error(message),
    };
    let mut runtime = fallbacks
        .into_iter()
        .map(|target| target.provider)
        .fold(RuntimeBuilder::from_shared(primary.provider), RuntimeBuilder::with_fallback_shared)
        .with_policy(policy)
        .with_pacing(pacing)
        .with_usage_limits(limits);
    if let Some(prices) = prices {
        runtime = runtime.with_prices(prices);
    }
    let stdout_terminal = std::io::stdout().is_terminal();
    // On a terminal, `--stream` writes the answer as it arrives and shows the decisions itself,
    // between the turns' text: nothing else may write inside the rows it counts to erase.
    let screen = args.stream && !args.json && stdout_terminal;
    // `--stream --json` on a terminal: the progress line would be written inside the JSON lines.
    let progress = (!(args.stream && args.json && stdout_terminal))
        .then(|| Progress::on_terminal(&policy, args.quiet, args.verbose).map(Arc::new))
        .flatten();
    if args.verbose && !screen {
        runtime = runtime.with_observer(|decision| eprintln!("{}", shown(decision)));
    } else if let Some(progress) = progress.as_ref().filter(|_| !screen) {
        let progress = Arc::clone(progress);
        runtime = runtime.with_observer(move |decision| progress.decided(decision));
    }
    if let Some(iterations) = args.tools.max_iterations() {
        runtime = runtime.with_max_iterations(iterations);
    }
    // Kept to be asked at the end whether every line was written.
    let (mut trace, mut journal) = (None, None);
    if let Some(path) = &args.trace {
        match TraceSink::to_file(path) {
            Ok(sink) => runtime = runtime.with_trace(trace.insert(sink).clone()),
            Err(error) => return usage_error(format!("--trace {}: {error}", path.display())),
        }
    }
    if let Some(path) = &args.journal {
        match Journal::open(path) {
            Ok(opened) => runtime = runtime.with_journal(journal.insert(opened).clone().with_retries(true)),
            Err(error) => return usage_error(format!("--journal {}: {error}", path.display())),
        }
    }
    let mut prompt = Prompt::new(args.prompt.as_str());
    if let Some(system) = &args.system {
        prompt = prompt.with_system(system.as_str());
    }
    let tokio = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(tokio) => tokio,
        Err(error) => return usage_error(format!("cannot start the async runtime: {error}")),
    };
    if args.tools.any() {
        match tokio.block_on(tool_flags::connect(mcp)) {
            Ok(sources) => {
                runtime = runtime.with_tools(tool_flags::toolbox(sources, tool_timeout, args.verbose && !screen))
            }
            Err(message) => return usage_error(message),
        }
    }
    let runtime = match runtime.build() {
        Ok(runtime) => runtime,
        // The limits were judged above: a dollar limit's error here names a target without a price.
        Err(error) if error.key() == Limit::MaxCostUsd.name() => {
            return usage_error(format!("{error}\nhint: {}", args.spend.unpriced_hint()));
        }
        Err(error) => return usage_error(error),
    };
    if let Some(progress) = &progress {
        progress.start(runtime.provider().name());
    }
    let result = if args.stream {
        let output = if args.json {
            Output::Json
        } else if screen {
            Output::Screen(Screen::new(progress.clone(), args.verbose))
        } else {
            Output::Answer
        };
        let stream = match &schema {
            None => runtime.exec_stream(prompt),
            Some(file) => runtime.request(prompt).schema(file.schema.clone(), |answer| file.check(answer)).stream(),
        };
        tokio.block_on(follow(stream, output))
    } else {
        match &schema {
            None => tokio.block_on(runtime.exec(prompt)),
            Some(file) => {
                tokio.block_on(runtime.request(prompt).schema(file.schema.clone(), |answer| file.check(answer)).send())
            }
        }
    };
    if let Some(progress) = &progress {
        progress.finish();
    }
    if args.verbose {
        eprintln!("{}", spent(&result));
    }
    if !args.json && !args.quiet {
        let spent = result.as_ref().map_or_else(ExecError::spent, Reply::spent);
        if let Some(line) = spent_line(&limits, spent) {
            eprintln!("{line}");
        }
    }
    // `--stream --json` printed it as its `done` event.
    if args.json && !args.stream {
        println!("{}", serde_json::to_string(&JsonOutcome::of(&result)).expect("plain data serializes"));
    }
    let mut code = match result {
        Ok(reply) => {
            // On a terminal, `--stream` wrote it as it came.
            if !args.json && !screen {
                println!("{}", shown(&reply));
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{}", shown(&error));
            for note in &withheld {
                eprintln!("{}", shown(note));
            }
            ExitCode::from(1)
        }
    };
    if !records_whole(args, trace.as_ref(), journal.as_ref()) {
        code = ExitCode::from(1);
    }
    code
}

/// Whether every line of the run's `--trace` and `--journal` was written; each that was not is
/// said on stderr, its flag, path and cause. A line the runtime could not write never failed the
/// exec, but the run's record is not whole.
fn records_whole(args: &Args, trace: Option<&TraceSink>, journal: Option<&Journal>) -> bool {
    let flushed = [
        trace.zip(args.trace.as_ref()).map(|(sink, path)| ("--trace", path, sink.flush())),
        journal.zip(args.journal.as_ref()).map(|(journal, path)| ("--journal", path, journal.flush())),
    ];
    let mut whole = true;
    for (flag, path, flushed) in flushed.into_iter().flatten() {
        if let Err(error) = flushed {
            eprintln!("error: {}", shown(format!("{flag} {}: {error}", path.display())));
            whole = false;
        }
    }
    whole
}

/// What `--verbose` says the exec cost: "tokens: 240 in, 43 out (120 in, 3 out on failed attempts)".
fn spent(result: &Result<Reply, ExecError>) -> String {
    let (total, failed) = match result {
        Ok(reply) => (reply.total_usage(), reply.failed_usage()),
        Err(error) => (error.usage(), error.usage()),
    };
    let mut line = format!("tokens: {} in, {} out", total.input_tokens, total.output_tokens);
    if total.cache_read_input_tokens > 0 || total.cache_creation_input_tokens > 0 {
        line += &format!(
            " ({} read from and {} written to the prompt cache)",
            total.cache_read_input_tokens, total.cache_creation_input_tokens
        );
    }
    if !failed.is_zero() {
        line += &format!(" ({} in, {} out on failed attempts)", failed.input_tokens, failed.output_tokens);
    }
    line
}

/// The primary target the flags and the environment describe, or what to set.
pub(crate) fn build_provider(args: &Args, env: &dyn Fn(&str) -> Option<String>) -> Result<Target, String> {
    // --base-url alone means the first wire (openai); else the first whose variables are set.
    let set = |kind: &WireKind| {
        kind.key_variables().iter().chain([&kind.base_url_variable()]).any(|name| env(name).is_some())
    };
    let kind = args.provider.unwrap_or_else(|| {
        let first = WireKind::ALL[0];
        if args.base_url.is_some() {
            first
        } else {
            WireKind::ALL.iter().copied().find(|kind| set(kind)).unwrap_or(first)
        }
    });
    let (key_var, url_var) = (kind.key_variables()[0], kind.base_url_variable());
    let base_url = args.base_url.clone().or_else(|| env(url_var)).unwrap_or_else(|| kind.default_base_url().to_owned());
    check_base_url(&base_url, kind, Whose { owner: "", flag: "--base-url" })?;
    let key = match args.api_key.clone().filter(|key| !key.is_empty()) {
        Some(key) => TargetKey { key: Some(key), withheld: None },
        None => {
            let owner = KeyOwner { target: kind.name(), flag: "--api-key-env" };
            target_key(kind, &base_url, args.api_key_env.as_deref(), owner, env)?
        }
    };
    if key.key.is_none() && is_default_base_url(&base_url, kind) {
        return Err(format!(
            "no API key for {}: pass --api-key-env VAR or --api-key, or set {key_var} (a server of your own needs \
             none: pass --base-url or set {url_var})",
            kind.name()
        ));
    }
    Ok(Target { provider: kind.provider(base_url, key.key, args.model.as_deref()), withheld: key.withheld })
}
