//! `agentic classify`: how both retry layers judge an error message, and the rule that decided.
//!
//! The verdicts come from the runtime's own classifiers (`session_verdict`, `exec_verdict`), fed
//! exactly what the layers feed them when a model call ends in this error message: layer 1 sees the
//! message as it is, layer 2 sees it as `"<Kind>: <text>"`.

use std::borrow::Cow;
use std::io::{self, Write};
use std::process::ExitCode;

use agentic_runtime::classify::{ExecVerdict, SessionVerdict, exec_verdict, retry_hint, session_verdict};
use agentic_runtime::message::AssistantMessage;
use agentic_runtime::message::StopReason;
use agentic_runtime::policy::rules::{format_ms, millis};
use agentic_runtime::provider::ModelError;
use agentic_runtime::provider::quoted_retry_delay;
use serde::Serialize;
use serde_json::Value;

use crate::input::{emit, hint_if_terminal, numbered_lines, usage_error};
use crate::json::{Fields, syntax_error_in_line};
use crate::terminal::shown;

/// The help text of `agentic classify`.
pub(crate) const LONG_ABOUT: &str = "\
Show how both retry layers judge an error message, and the rule that decided.

Layer 1 (session) says whether the model call is retried; layer 2 (exec) says whether the exec \
attempt is retried (retry), stops for good (fail_permanently), stops because the conversation no \
longer fits (context_overflow) or returns a programming error unchanged (raise).

Plain: each TEXT (or, with no TEXT, each non-blank line of stdin) is the error message of a failed \
model call (stop_reason \"error\", no HTTP status). For example `agentic classify \"429 Too Many \
Requests\"` prints:

  \"429 Too Many Requests\"
    session: retryable (matched retry pattern \"too many requests\")
    exec:    retry (no permanent marker, status or code)

--json: each line of stdin is one JSON object

  {\"error_message\": str, \"stop_reason\"?: \"error\"|\"stop\"|\"tool_use\"|\"length\"|\"aborted\",
   \"status\"?: int, \"should_retry\"?: bool, \"code\"?: str}

(stop_reason defaults to \"error\"; status is the HTTP status, 100 to 599; should_retry is the \
server's x-should-retry header; code is the provider's error code, e.g. \"insufficient_quota\"; \
null is the same as leaving a field out; any other field is an error). The message text is kept as \
given; a status, should_retry or code makes it a typed error as well. Each line gives one output line

  {\"session\": {\"retryable\": bool, \"reason\": str},
   \"exec\": {\"action\": \"retry\"|\"fail_permanently\"|\"raise\"|\"context_overflow\", \"reason\": str},
   \"retry_after_ms\"?: int}

with retry_after_ms the wait the server asks for, when the message states one, read as the runtime \
reads server hints: Google's RetryInfo quoted in the text (\"retryDelay\": \"34s\", or retry_delay \
{ seconds: 34 }), else a \"Please retry in 34.07s\" or \"try again in 20ms\"; absent when there is \
none. The plain output then adds a line `hint: the server asks to wait 34 s`.

A malformed line (not JSON, not an object, a missing, unknown or ill-typed field, an unknown \
stop_reason, a status out of range, not UTF-8, longer than 1 MiB) gives {\"error\": \"line N: \
<what is wrong>\"} and the next lines go on; N counts every line of stdin from 1. Blank lines give \
no output. With --json and TEXT arguments, stdin is not read: each TEXT is an error_message with \
the defaults.

Limits: a line of stdin may be at most 1 MiB (a plain one too); a longer line is skipped without \
being read into memory and reported as `line N: longer than 1 MiB (the limit for one line); it was \
skipped` (on stderr without --json), and the next lines go on. Lines are classified one at a time, \
so stdin may be of any length; but a line that runs past 64 MiB without a line ending (/dev/zero, \
binary data) stops the reading with `error: cannot read stdin: line N has no line ending within \
64 MiB; ...` and exit status 2.

Exit status: 0, or 1 when any line was malformed; 2 when stdin cannot be read or never ends a line.";

/// Arguments of `agentic classify`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Read one JSON object per stdin line; print one JSON verdict per line.
    #[arg(long)]
    json: bool,
    /// Error messages to classify; without any, read stdin.
    #[arg(value_name = "TEXT")]
    texts: Vec<String>,
}

/// One failure to judge: what the failed model call's message holds.
#[derive(Debug)]
struct Failure<'a> {
    text: Cow<'a, str>,
    stop_reason: StopReason,
    error: Option<ModelError>,
}

impl<'a> Failure<'a> {
    /// An error message with no typed facts, as a stream's error event gives it.
    fn plain(text: &'a str) -> Self {
        Self { text: Cow::Borrowed(text), stop_reason: StopReason::Error, error: None }
    }

    /// The wait the server asks for, as the runtime reads it: the typed hint, else Google's
    /// `RetryInfo` quoted in the text (`"retryDelay": "34s"`), else a "retry in 2.5s" in the text.
    fn retry_after_ms(&self) -> Option<u64> {
        let typed = self.error.as_ref().and_then(ModelError::retry_after);
        let wait = typed.or_else(|| quoted_retry_delay(&self.text)).or_else(|| retry_hint(&self.text, None))?;
        Some(millis(wait))
    }

    /// Both layers' verdicts.
    fn judge(&self) -> (SessionVerdict, ExecVerdict) {
        let error = self.error.as_ref();
        let session = session_verdict(self.stop_reason, &self.text, error);
        let message = AssistantMessage::error_event(self.text.as_ref(), self.error.clone());
        let exec = exec_verdict(&message.failure_text(), error);
        (session, exec)
    }
}

/// The output line of `--json`, in the contract's field order.
#[derive(Serialize)]
struct JsonVerdicts {
    session: JsonSession,
    exec: JsonExec,
    /// The server's requested wait found in the message, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<u64>,
}

#[derive(Serialize)]
struct JsonSession {
    retryable: bool,
    reason: String,
}

#[derive(Serialize)]
struct JsonExec {
    action: &'static str,
    reason: String,
}

/// `{"error": "line N: ..."}`.
#[derive(Serialize)]
struct JsonError {
    error: String,
}

/// Runs `agentic classify`.
pub(crate) fn run(args: &Args) -> ExitCode {
    let mut out = io::stdout().lock();
    match (args.json, args.texts.is_empty()) {
        (false, false) => {
            for text in &args.texts {
                if !emit(&mut out, plain_verdicts(&Failure::plain(text))) {
                    break;
                }
            }
            ExitCode::SUCCESS
        }
        (true, false) => {
            for text in &args.texts {
                if !emit(&mut out, json_verdicts(&Failure::plain(text))) {
                    break;
                }
            }
            ExitCode::SUCCESS
        }
        (json, true) => {
            hint_if_terminal(if json { "JSON objects, one per line" } else { "error messages, one per line" });
            classify_stdin(json, &mut out)
        }
    }
}

/// Classifies each non-blank stdin line; 1 when any line was malformed.
fn classify_stdin(json: bool, out: &mut impl Write) -> ExitCode {
    let mut malformed = false;
    for line in numbered_lines(io::stdin().lock()) {
        let line = match line {
            Ok(line) => line,
            Err(error) => return usage_error(format!("cannot read stdin: {error}")),
        };
        let text = match line.text {
            Ok(text) => text,
            Err(problem) => {
                malformed = true;
                let problem = format!("line {}: {problem}", line.number);
                let written = if json { emit(out, to_json(&JsonError { error: problem })) } else { warn(&problem) };
                if !written {
                    break;
                }
                continue;
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        let output = if json {
            match parse_json_line(&text) {
                Ok(failure) => json_verdicts(&failure),
                Err(problem) => {
                    malformed = true;
                    to_json(&JsonError { error: format!("line {}: {problem}", line.number) })
                }
            }
        } else {
            plain_verdicts(&Failure::plain(&text))
        };
        if !emit(out, output) {
            break;
        }
    }
    if malformed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

fn warn(problem: &str) -> bool {
    eprintln!("error: {}", shown(problem));
    true
}

/// The fields of a `--json` input line.
const FIELDS: [&str; 5] = ["error_message", "stop_reason", "status", "should_retry", "code"];

/// Reads one `--json` input line, or says what is wrong with it.
fn parse_json_line(text: &str) -> Result<Failure<'static>, String> {
    let value: Value = serde_json::from_str(text).map_err(|error| syntax_error_in_line(&error))?;
    let fields = Fields::of(&value, "", "a line")?;
    fields.only(&FIELDS)?;
    let message = fields.required_str("error_message")?;
    let stop_reason = match fields.str("stop_reason")? {
        None => StopReason::Error,
        Some(name) => StopReason::from_name(name).ok_or_else(|| {
            format!(
                "unknown stop_reason {}; expected one of \"error\", \"stop\", \"tool_use\", \"length\", \"aborted\"",
                Value::String(name.to_owned())
            )
        })?,
    };
    let status = fields.status("status")?;
    let should_retry = fields.bool("should_retry")?;
    let code = fields.str("code")?;
    let error = typed_error(message, status, should_retry, code);
    Ok(Failure { text: Cow::Owned(message.to_owned()), stop_reason, error })
}

/// The typed error a scripted error step carries (as `Step::error(text).with_status(..)` builds
/// it): `ModelError::parse(text)` with the typed facts, or none when there are none.
fn typed_error(text: &str, status: Option<u16>, should_retry: Option<bool>, code: Option<&str>) -> Option<ModelError> {
    if status.is_none() && should_retry.is_none() && code.is_none() {
        return None;
    }
    let mut error = ModelError::parse(text);
    if let Some(status) = status {
        error = error.with_status(status);
    }
    if let Some(should_retry) = should_retry {
        error = error.with_should_retry(should_retry);
    }
    if let Some(code) = code {
        error = error.with_code(code);
    }
    Some(error)
}

fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("plain structs of strings and booleans serialize")
}

fn json_verdicts(failure: &Failure<'_>) -> String {
    let (session, exec) = failure.judge();
    to_json(&JsonVerdicts {
        session: JsonSession { retryable: session.retryable, reason: session.reason.to_string() },
        exec: JsonExec { action: exec.action.name(), reason: exec.reason.to_string() },
        retry_after_ms: failure.retry_after_ms(),
    })
}

fn plain_verdicts(failure: &Failure<'_>) -> String {
    let (session, exec) = failure.judge();
    let retryable = if session.retryable { "retryable" } else { "not retryable" };
    let hint = match failure.retry_after_ms() {
        Some(ms) => format!("\n  hint:    the server asks to wait {}", format_ms(ms)),
        None => String::new(),
    };
    // For a terminal: the quoted text escapes C0 controls, but not C1 ones.
    shown(format_args!(
        "{}\n  session: {retryable} ({})\n  exec:    {} ({}){hint}",
        Value::String(failure.text.to_string()),
        session.reason,
        exec.action.name(),
        exec.reason
    ))
}
