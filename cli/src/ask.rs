//! `agentic ask`: one exec against a real provider (or any compatible server), through both layers.

use std::process::ExitCode;

use agentic_runtime::policy::rules::millis;

use crate::schema::SchemaFile;
use crate::terminal::shown;
use agentic_runtime::{Decision, ExecError, Prompt, Provider, Reply, Runtime, Usage, WireKind};
use serde::Serialize;

use crate::input::usage_error;
use crate::otel::Telemetry;
use crate::policy_flags::PolicyFlags;

/// The help text of `agentic ask`.
pub(crate) const LONG_ABOUT: &str = "\
Send one prompt through both retry layers and print the answer.

The provider is --provider, or openai when --base-url, OPENAI_API_KEY or OPENAI_BASE_URL is set, \
else anthropic when ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL is set, else gemini when GEMINI_API_KEY, \
GOOGLE_API_KEY or GEMINI_BASE_URL is set. The key comes from --api-key or OPENAI_API_KEY / \
ANTHROPIC_API_KEY / GEMINI_API_KEY (then GOOGLE_API_KEY); the base URL from --base-url or \
OPENAI_BASE_URL / ANTHROPIC_BASE_URL / GEMINI_BASE_URL. A server of your own (vLLM, Ollama, llama.cpp, `agentic chaos`) needs no key.

Prints the answer on stdout (exit 0), or the exec error on stderr (exit 1). --json prints one line \
{\"answer\": str, \"calls\": int, \"elapsed_ms\": int, \"usage\": {..}, \"attempts\": [..]} (on failure: \
\"error\" and \"error_kind\" instead of \"answer\"), usage being the tokens of every call the server \
reported them for, failed ones included ({\"input_tokens\": int, \"output_tokens\": int}, with \
cache_read_input_tokens and cache_creation_input_tokens when reported), one attempt per decision of \
either layer with its layer, call, error, verdict, reason and delay_ms. --verbose prints each decision \
on stderr as it is made, and the tokens spent at the end; a wait for a cooldown another call's \
server asked for is a decision too (verdict cooled_down). Exit 2 for bad input (a missing key, an \
invalid policy, a --schema file over 1 MiB).

Control characters in what is printed for people (the answer, the error, the --verbose decisions) \
other than newline and tab are escaped (ESC as \\u{1b}, CR as \\r), so that a server's or a \
model's text cannot set the terminal's title, write its clipboard or rewrite a line; --json keeps \
the exact text, in JSON's escapes.";

/// The `--provider` values: every wire of the registry, by name, with its summary as the help.
fn provider_parser() -> impl clap::builder::TypedValueParser<Value = WireKind> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values = WireKind::ALL.iter().map(|kind| PossibleValue::new(kind.name()).help(kind.summary()));
    // Only the names listed get here: the parser refuses any other first.
    PossibleValuesParser::new(values).map(|name| WireKind::from_name(&name).unwrap_or(WireKind::ALL[0]))
}

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
    /// The API key [default: from the environment].
    #[arg(long, value_name = "K")]
    api_key: Option<String>,
    /// A system instruction.
    #[arg(long, value_name = "TEXT")]
    system: Option<String>,
    /// Print one JSON line instead of the answer.
    #[arg(long)]
    json: bool,
    /// Print each decision of the layers on stderr as it is made.
    #[arg(long, short)]
    verbose: bool,
    /// Ask for JSON that this JSON Schema file accepts, and print it once it does (an answer that
    /// is not such JSON goes back to the model with what is wrong, like a rejected reply).
    #[arg(long, value_name = "FILE.json")]
    schema: Option<std::path::PathBuf>,
    #[command(flatten)]
    policy: PolicyFlags,
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
    let schema = match args.schema.as_deref().map(SchemaFile::load).transpose() {
        Ok(schema) => schema,
        Err(message) => return usage_error(message),
    };
    let provider = match build_provider(args, &|name| std::env::var(name).ok().filter(|v| !v.is_empty())) {
        Ok(provider) => provider,
        Err(message) => return usage_error(message),
    };
    let mut runtime = Runtime::from_shared(provider);
    if args.verbose {
        runtime = runtime.with_observer(|decision| eprintln!("{}", shown(decision)));
    }
    let mut prompt = Prompt::new(args.prompt.as_str());
    if let Some(system) = &args.system {
        prompt = prompt.with_system(system.as_str());
    }
    let tokio = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(tokio) => tokio,
        Err(error) => return usage_error(format!("cannot start the async runtime: {error}")),
    };
    let result = match &schema {
        None => tokio.block_on(runtime.exec_with(&policy, prompt)),
        Some(file) => tokio.block_on(runtime.exec_json_schema_with(
            &policy,
            file.schema.clone(),
            |answer| file.check(answer),
            prompt,
        )),
    };
    if args.verbose {
        eprintln!("{}", spent(&result));
    }
    if args.json {
        println!("{}", serde_json::to_string(&JsonOutcome::of(&result)).expect("plain data serializes"));
    }
    match result {
        Ok(reply) => {
            if !args.json {
                println!("{}", shown(&reply));
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{}", shown(&error));
            ExitCode::from(1)
        }
    }
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

/// The provider the flags and the environment describe, or what to set.
pub(crate) fn build_provider(
    args: &Args,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<std::sync::Arc<dyn Provider>, String> {
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
    let (key_var, url_var, default_url) = (kind.key_variables()[0], kind.base_url_variable(), kind.default_base_url());
    let key = args
        .api_key
        .clone()
        .filter(|key| !key.is_empty())
        .or_else(|| kind.key_variables().iter().find_map(|name| env(name)));
    let base_url = args.base_url.clone().or_else(|| env(url_var)).unwrap_or_else(|| default_url.to_owned());
    if !base_url.starts_with("http://") && !base_url.starts_with("https://") {
        return Err(format!(
            "the base URL `{}` is not an http(s) URL: pass e.g. --base-url http://127.0.0.1:8080{}",
            agentic_runtime::provider::display_url(&base_url),
            base_path(default_url)
        ));
    }
    if base_url.contains('#') {
        // The provider would refuse it at the first call; a flag's mistake is a usage error, now.
        return Err(format!(
            "the base URL `{}` has a fragment (`#...`), which is never sent to the server: remove it \
             (a query, `?api-version=...`, is kept after the path)",
            agentic_runtime::provider::display_url(&base_url)
        ));
    }
    if key.is_none() && base_url.trim_end_matches('/') == default_url {
        return Err(format!(
            "no API key for {}: pass --api-key or set {key_var} (a server of your own needs none: \
             pass --base-url or set {url_var})",
            kind.name()
        ));
    }
    Ok(kind.provider(base_url, key, args.model.as_deref()))
}

/// The path of a wire's own base URL (`/v1` of `https://api.openai.com/v1`), for the example of a
/// local one.
fn base_path(default_url: &str) -> &str {
    let after_scheme = default_url.split_once("://").map_or(default_url, |(_, rest)| rest);
    after_scheme.find('/').map_or("", |at| &after_scheme[at..])
}

/// The `--json` line.
#[derive(Serialize)]
struct JsonOutcome<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_kind: Option<&'static str>,
    calls: u32,
    elapsed_ms: u64,
    usage: Usage,
    attempts: Vec<JsonAttempt<'a>>,
}

#[derive(Serialize)]
struct JsonAttempt<'a> {
    layer: &'static str,
    attempt: u32,
    call: u32,
    error: &'a str,
    verdict: &'static str,
    reason: String,
    delay_ms: u64,
}

impl<'a> JsonOutcome<'a> {
    fn of(result: &'a Result<Reply, ExecError>) -> Self {
        let (calls, elapsed, decisions, usage) = match result {
            Ok(reply) => (reply.calls(), reply.elapsed(), reply.decisions(), reply.total_usage()),
            Err(error) => (error.calls(), error.elapsed(), error.decisions(), error.usage()),
        };
        Self {
            answer: result.as_ref().ok().map(Reply::text),
            error: result.as_ref().err().map(ToString::to_string),
            error_kind: result.as_ref().err().map(|error| error.kind().name()),
            calls,
            elapsed_ms: millis(elapsed),
            usage,
            attempts: decisions.iter().map(JsonAttempt::of).collect(),
        }
    }
}

impl<'a> JsonAttempt<'a> {
    fn of(decision: &'a Decision) -> Self {
        Self {
            layer: decision.layer.name(),
            attempt: decision.attempt,
            call: decision.call,
            error: &decision.error,
            verdict: decision.verdict.name(),
            reason: decision.reason.to_string(),
            delay_ms: decision.delay.map_or(0, millis),
        }
    }
}
