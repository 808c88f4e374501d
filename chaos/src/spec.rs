//! The JSON form of a scenario: a flat, typo-proof model, its checks, and the conversion both ways.
//!
//! Every step is one flat object (`kind` plus the fields that kind takes), so that serde reports a
//! wrong type with its exact path and line; which fields a kind takes is checked afterwards, here.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::ScenarioError;
use crate::scenario::Scenario;
use crate::step::{
    DEFAULT_INTERVAL_MS, DEFAULT_TEXT, EchoKey, EmptyChunkFlood, EndlessJson, EndlessText, Hang, HangAt, HttpError,
    Interrupt, InterruptKind, KeepAliveFlood, Malformed, Preset, Reply, SseError, Stall, Step, StepKind, ToolUse,
    WrongContentType, valid_header_name, valid_header_value,
};

/// The most chunks an answer may have (`chunks`, `after_chunks`, the words of a `text` streamed one
/// per word, a `tool_use` step's argument pieces in all).
pub const MAX_CHUNKS: u32 = 100_000;

/// The longest text a scenario may give, in bytes (8 MiB): each of `text`, `body`, `message`,
/// `data`, a header value, a tool call's `input` as JSON.
pub const MAX_TEXT_BYTES: usize = 8 * 1024 * 1024;

/// The most calls a `tool_use` step may have.
pub const MAX_TOOL_CALLS: usize = 1_000;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScenarioSpec {
    #[serde(default)]
    steps: Vec<StepSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    default: Option<StepSpec>,
}

macro_rules! step_spec {
    ($($field:ident: $ty:ty,)*) => {
        #[derive(Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct StepSpec {
            kind: StepKind,
            $(#[serde(default, skip_serializing_if = "Option::is_none")]
            $field: Option<$ty>,)*
        }

        impl StepSpec {
            fn empty(kind: StepKind) -> Self {
                Self { kind, $($field: None,)* }
            }

            /// The names of the fields that are set, in declaration order.
            fn present(&self) -> Vec<&'static str> {
                let mut names = Vec::new();
                $(if self.$field.is_some() {
                    names.push(stringify!($field));
                })*
                names
            }
        }
    };
}

step_spec! {
    times: u32,
    text: String,
    chunks: u32,
    chunk_delay_ms: u64,
    after_chunks: u32,
    ms: u64,
    status: u16,
    retry_after: RetryAfter,
    retry_after_ms: u64,
    x_should_retry: bool,
    headers: BTreeMap<String, String>,
    error_type: String,
    message: String,
    code: String,
    param: String,
    body: String,
    data: String,
    calls: Vec<ToolCallSpec>,
    at: HangAtSpec,
    interval_ms: u64,
    ping: bool,
    endless_body: bool,
    echo_key: EchoKey,
    content_type: String,
}

/// Where a `hang` step falls silent, besides `after_chunks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum HangAtSpec {
    #[serde(rename = "before_headers")]
    Before,
    #[serde(rename = "in_headers")]
    In,
    #[serde(rename = "after_headers")]
    After,
}

/// One call of a `tool_use` step: `{"name": "get_weather", "input": {"city": "Paris"}}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolCallSpec {
    name: String,
    #[serde(default = "empty_object")]
    input: serde_json::Value,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

use StepKind as K;

const ALL: &[StepKind] = &[
    K::Ok,
    K::HttpError,
    K::CloseBeforeHeaders,
    K::DropStream,
    K::Truncate,
    K::SseError,
    K::Stall,
    K::Hang,
    K::MalformedChunk,
    K::ContextOverflow,
    K::InvalidApiKey,
    K::ToolUse,
    K::KeepAliveFlood,
    K::EmptyChunkFlood,
    K::EndlessText,
    K::EndlessJson,
    K::WrongContentType,
];
const STREAMED: &[StepKind] = &[
    K::Ok,
    K::DropStream,
    K::Truncate,
    K::SseError,
    K::Stall,
    K::Hang,
    K::MalformedChunk,
    K::KeepAliveFlood,
    K::EmptyChunkFlood,
];
const TEXT: &[StepKind] = &[
    K::Ok,
    K::DropStream,
    K::Truncate,
    K::SseError,
    K::Stall,
    K::Hang,
    K::MalformedChunk,
    K::ToolUse,
    K::KeepAliveFlood,
    K::EmptyChunkFlood,
    K::EndlessText,
];
const MID_STREAM: &[StepKind] = &[
    K::DropStream,
    K::Truncate,
    K::SseError,
    K::Stall,
    K::Hang,
    K::MalformedChunk,
    K::KeepAliveFlood,
    K::EmptyChunkFlood,
];
const INTERVAL: &[StepKind] = &[
    K::HttpError,
    K::ContextOverflow,
    K::InvalidApiKey,
    K::KeepAliveFlood,
    K::EmptyChunkFlood,
    K::EndlessText,
    K::EndlessJson,
];
const HEADERS: &[StepKind] = &[
    K::Ok,
    K::HttpError,
    K::DropStream,
    K::Truncate,
    K::SseError,
    K::Stall,
    K::Hang,
    K::MalformedChunk,
    K::ContextOverflow,
    K::InvalidApiKey,
    K::ToolUse,
    K::KeepAliveFlood,
    K::EmptyChunkFlood,
    K::EndlessText,
    K::EndlessJson,
    K::WrongContentType,
];
const HTTP: &[StepKind] = &[K::HttpError, K::ContextOverflow, K::InvalidApiKey];
const ERROR_BODY: &[StepKind] = &[K::HttpError, K::ContextOverflow, K::InvalidApiKey, K::SseError];

/// The kinds of step that take `field`.
fn kinds_taking(field: &str) -> &'static [StepKind] {
    match field {
        "times" => ALL,
        "text" | "chunks" => TEXT,
        "chunk_delay_ms" => STREAMED,
        "calls" => &[K::ToolUse],
        "after_chunks" => MID_STREAM,
        "ms" => &[K::Stall],
        "status" | "error_type" | "message" | "code" => ERROR_BODY,
        "retry_after" | "retry_after_ms" | "x_should_retry" | "param" | "endless_body" => HTTP,
        "body" => &[K::HttpError, K::ContextOverflow, K::InvalidApiKey, K::WrongContentType],
        "echo_key" => ERROR_BODY,
        "headers" => HEADERS,
        "data" => &[K::MalformedChunk],
        "at" => &[K::Hang],
        "interval_ms" => INTERVAL,
        "ping" => &[K::KeepAliveFlood],
        "content_type" => &[K::WrongContentType],
        _ => &[],
    }
}

/// A `retry_after` value: seconds as a number, or any header text such as an HTTP-date.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RetryAfter(String);

impl Serialize for RetryAfter {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Only a value that a number writes back exactly ("2", not "+2" or "007") is a number.
        match self.0.parse::<u64>() {
            Ok(secs) if secs.to_string() == self.0 => serializer.serialize_u64(secs),
            _ => serializer.serialize_str(&self.0),
        }
    }
}

impl<'de> Deserialize<'de> for RetryAfter {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = RetryAfter;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("seconds as a non-negative integer, or a header value such as an HTTP-date")
            }

            fn visit_u64<E: serde::de::Error>(self, secs: u64) -> Result<RetryAfter, E> {
                Ok(RetryAfter(secs.to_string()))
            }

            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<RetryAfter, E> {
                Err(E::custom(
                    "as a number, `retry_after` is whole seconds below 2^64; to send any other value, \
                     write it as a string, e.g. `\"1e300\"`",
                ))
            }

            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<RetryAfter, E> {
                if valid_header_value(value) {
                    Ok(RetryAfter(value.to_owned()))
                } else {
                    Err(E::custom("a header value must not contain CR, LF or NUL"))
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A check that failed after parsing: the field's path and what is wrong.
struct Invalid {
    field: String,
    message: String,
}

fn invalid(field: String, message: impl Into<String>) -> Invalid {
    Invalid { field, message: message.into() }
}

/// Parse and check a scenario; `file` names the source in errors.
pub(crate) fn parse(json: &str, file: Option<&Path>) -> Result<Scenario, ScenarioError> {
    let located = |field: Option<String>, line, column, message: String| ScenarioError::Invalid {
        file: file.map(Path::to_path_buf),
        field,
        line,
        column,
        message,
    };
    let from_serde = |path: Option<String>, e: serde_json::Error| {
        let (line, column) = (e.line(), e.column());
        let message = with_suggestion(strip_position(&e.to_string(), line, column));
        let field = field_of(path.as_deref().unwrap_or(""), &message);
        let (line, column) = if line == 0 { (None, None) } else { (Some(line), Some(column)) };
        located(field, line, column, message)
    };
    if let Some((line, column)) = top_level_array(json) {
        let message = "a scenario is a JSON object `{\"steps\": [...]}`, not an array".to_owned();
        return Err(located(None, Some(line), Some(column), message));
    }
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let spec: ScenarioSpec = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let path = e.path().to_string();
        from_serde(Some(path), e.into_inner())
    })?;
    deserializer.end().map_err(|e| from_serde(None, e))?;
    spec.into_scenario().map_err(|e| located(Some(e.field), None, None, e.message))
}

/// Where the JSON starts with `[`, if it does: serde would read an array into the scenario's
/// fields in order, which nobody means.
fn top_level_array(json: &str) -> Option<(usize, usize)> {
    let start = json.len() - json.trim_start().len();
    if !json[start..].starts_with('[') {
        return None;
    }
    let before = &json[..start];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |last| last.chars().count()) + 1;
    Some((line, column))
}

/// serde_json's message without its " at line L column C" suffix (the error carries them apart),
/// and with the model's type names in the words of the format.
fn strip_position(message: &str, line: usize, column: usize) -> String {
    let suffix = format!(" at line {line} column {column}");
    message
        .strip_suffix(&suffix)
        .unwrap_or(message)
        .replace("struct ScenarioSpec", "a scenario object `{\"steps\": [...]}`")
        .replace("struct StepSpec", "a step object `{\"kind\": ...}`")
        .replace("struct ToolCallSpec", "a tool call object `{\"name\": ..., \"input\": {...}}`")
}

/// serde's "unknown field `x`, expected one of `a`, `b`" with "; did you mean `a`?" when one of the
/// expected names is close.
fn with_suggestion(message: String) -> String {
    let Some(rest) = message.strip_prefix("unknown field `").or_else(|| message.strip_prefix("unknown variant `"))
    else {
        return message;
    };
    let Some((given, expected)) = rest.split_once('`') else {
        return message;
    };
    let nearest = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|name| (strsim::levenshtein(given, name), name))
        .filter(|(d, name)| *d <= 2.max(name.len() / 3))
        .min_by_key(|(d, _)| *d);
    match nearest {
        Some((_, name)) => format!("{message}; did you mean `{name}`?"),
        None => message,
    }
}

/// The field's path: serde_path_to_error's, plus the unknown field's own name when serde names
/// one (the path stops at the object that holds it).
fn field_of(path: &str, message: &str) -> Option<String> {
    let path = if path == "." { "" } else { path };
    let unknown = message.strip_prefix("unknown field `").and_then(|rest| rest.split_once('`')).map(|(name, _)| name);
    match (path, unknown) {
        (path, Some(name)) if !path.ends_with(name) => {
            Some(if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") })
        }
        ("", _) => None,
        (path, _) => Some(path.to_owned()),
    }
}

impl ScenarioSpec {
    fn into_scenario(self) -> Result<Scenario, Invalid> {
        let mut scenario = Scenario::new();
        for (i, spec) in self.steps.into_iter().enumerate() {
            let at = format!("steps[{i}]");
            let times = spec.times.unwrap_or(1);
            if times == 0 {
                return Err(invalid(format!("{at}.times"), "`times` must be at least 1; remove the step to skip it"));
            }
            let step = spec.into_step(&at)?;
            scenario = scenario.then_times(times, step);
        }
        if let Some(spec) = self.default {
            if spec.times.is_some() {
                return Err(invalid(
                    "default.times".to_owned(),
                    "the default step answers every request after the scripted steps; it takes no `times`",
                ));
            }
            scenario = scenario.otherwise(spec.into_step("default")?);
        }
        Ok(scenario)
    }
}

/// A text of `len` bytes, `name` at `field`, fits in [`MAX_TEXT_BYTES`].
fn check_length(field: String, name: &str, len: usize) -> Result<(), Invalid> {
    if len <= MAX_TEXT_BYTES {
        return Ok(());
    }
    Err(invalid(
        field,
        format!("`{name}` is {len} bytes long, more than the chaos server's limit of {MAX_TEXT_BYTES} bytes (8 MiB)"),
    ))
}

fn list(kinds: &[StepKind]) -> String {
    kinds.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
}

impl StepSpec {
    fn into_step(self, at: &str) -> Result<Step, Invalid> {
        let kind = self.kind;
        for field in self.present() {
            let takes = kinds_taking(field);
            if !takes.contains(&kind) {
                return Err(invalid(
                    format!("{at}.{field}"),
                    format!("does not apply to a `{kind}` step; it applies to {}", list(takes)),
                ));
            }
        }
        self.check_values(at)?;
        self.check_sizes(at)?;
        let headers = self.headers_checked(at)?;
        let tool_text = self.text.clone();
        let reply = Reply {
            text: self.text.unwrap_or_else(|| DEFAULT_TEXT.to_owned()),
            chunks: self.chunks,
            chunk_delay_ms: self.chunk_delay_ms.unwrap_or(0),
            headers: headers.clone(),
        };
        let after = self.after_chunks.unwrap_or(0);
        let interval_ms = self.interval_ms.unwrap_or(DEFAULT_INTERVAL_MS);
        let http = |preset: Preset, status: u16| HttpError {
            status,
            preset,
            retry_after: self.retry_after.clone().map(|r| r.0),
            retry_after_ms: self.retry_after_ms,
            should_retry: self.x_should_retry,
            headers: headers.clone(),
            error_type: self.error_type.clone(),
            message: self.message.clone(),
            code: self.code.clone(),
            param: self.param.clone(),
            body: self.body.clone(),
            endless: (self.endless_body == Some(true)).then_some(interval_ms),
            echo_key: self.echo_key,
        };
        let step = match kind {
            K::Ok => Step::Ok(reply),
            K::HttpError => {
                let Some(status) = self.status else {
                    return Err(invalid(
                        format!("{at}.status"),
                        "an `http_error` step needs a `status`, e.g. `\"status\": 429`",
                    ));
                };
                Step::HttpError(http(Preset::Generic, status))
            }
            K::ContextOverflow => Step::ContextOverflow(http(Preset::ContextOverflow, self.status.unwrap_or(400))),
            K::InvalidApiKey => Step::InvalidApiKey(http(Preset::InvalidApiKey, self.status.unwrap_or(401))),
            K::CloseBeforeHeaders => Step::CloseBeforeHeaders,
            K::DropStream | K::Truncate => {
                let kind = if kind == K::DropStream { InterruptKind::Drop } else { InterruptKind::Truncate };
                Step::from(Interrupt { after_chunks: after, kind, reply })
            }
            K::SseError => Step::SseError(SseError {
                after_chunks: after,
                reply,
                error_type: self.error_type,
                message: self.message,
                code: self.code,
                status: self.status,
                echo_key: self.echo_key,
            }),
            K::Stall => {
                let Some(ms) = self.ms else {
                    return Err(invalid(
                        format!("{at}.ms"),
                        "a `stall` step needs `ms`, the pause in milliseconds, e.g. `\"ms\": 50`",
                    ));
                };
                Step::Stall(Stall { ms, after_chunks: self.after_chunks, reply })
            }
            K::Hang => {
                let at = match (self.at, self.after_chunks) {
                    (_, Some(k)) => HangAt::AfterChunks(k),
                    (None | Some(HangAtSpec::Before), None) => HangAt::BeforeHeaders,
                    (Some(HangAtSpec::In), None) => HangAt::InHeaders,
                    (Some(HangAtSpec::After), None) => HangAt::AfterHeaders,
                };
                Step::Hang(Hang { at, reply })
            }
            K::MalformedChunk => Step::MalformedChunk(Malformed { after_chunks: after, reply, data: self.data }),
            K::ToolUse => Step::ToolUse(ToolUse {
                calls: self.calls.unwrap_or_default().into_iter().map(|call| (call.name, call.input)).collect(),
                text: tool_text,
                argument_chunks: self.chunks.unwrap_or(ToolUse::DEFAULT_ARGUMENT_CHUNKS),
                headers,
            }),
            K::KeepAliveFlood => Step::KeepAliveFlood(KeepAliveFlood {
                after_chunks: self.after_chunks,
                interval_ms,
                ping: self.ping == Some(true),
                reply,
            }),
            K::EmptyChunkFlood => Step::EmptyChunkFlood(EmptyChunkFlood { after_chunks: after, interval_ms, reply }),
            K::EndlessText => Step::EndlessText(EndlessText { interval_ms, reply }),
            K::EndlessJson => Step::EndlessJson(EndlessJson { interval_ms, headers }),
            K::WrongContentType => Step::WrongContentType(WrongContentType {
                content_type: self.content_type.unwrap_or_else(|| WrongContentType::DEFAULT_CONTENT_TYPE.to_owned()),
                body: self.body.unwrap_or_else(|| WrongContentType::DEFAULT_BODY.to_owned()),
                headers,
            }),
        };
        Ok(step)
    }

    /// The checks of single values: ranges, required fields, fields that exclude each other.
    fn check_values(&self, at: &str) -> Result<(), Invalid> {
        let field = |name: &str| format!("{at}.{name}");
        if self.chunks == Some(0) {
            return Err(invalid(field("chunks"), "`chunks` must be at least 1"));
        }
        if let Some(status) = self.status {
            if !(400..=599).contains(&status) {
                return Err(invalid(
                    field("status"),
                    format!("`status` must be an HTTP error status, from 400 to 599, not {status}"),
                ));
            }
        }
        if let Some(data) = &self.data {
            if data.contains(['\r', '\n']) {
                return Err(invalid(field("data"), "the malformed chunk's `data` must be one line, without CR or LF"));
            }
        }
        if let Some(content_type) = &self.content_type {
            if !valid_header_value(content_type) {
                return Err(invalid(field("content_type"), "a header value must not contain CR, LF or NUL"));
            }
        }
        if self.at.is_some() && self.after_chunks.is_some() {
            return Err(invalid(
                field("at"),
                "`at` and `after_chunks` exclude each other: `at` hangs before, in or after the headers, \
                 `after_chunks` after some chunks of the body",
            ));
        }
        if self.interval_ms.is_some() && HTTP.contains(&self.kind) && self.endless_body != Some(true) {
            return Err(invalid(
                field("interval_ms"),
                "`interval_ms` paces an endless body: add `\"endless_body\": true`, or remove `interval_ms`",
            ));
        }
        if self.kind == K::EndlessText && self.text.as_deref() == Some("") {
            return Err(invalid(
                field("text"),
                "an `endless_text` step needs a non-empty `text`: its chunks are sent over and over",
            ));
        }
        if self.kind == K::ToolUse {
            self.check_calls(at)?;
        }
        Ok(())
    }

    fn check_calls(&self, at: &str) -> Result<(), Invalid> {
        let calls = self.calls.as_deref().unwrap_or_default();
        if calls.is_empty() {
            return Err(invalid(
                format!("{at}.calls"),
                "a `tool_use` step needs `calls`, e.g. `\"calls\": [{\"name\": \"get_weather\", \"input\": {\"city\": \"Paris\"}}]`",
            ));
        }
        for (i, call) in calls.iter().enumerate() {
            if call.name.is_empty() {
                return Err(invalid(format!("{at}.calls[{i}].name"), "a tool call needs a non-empty `name`"));
            }
            if !call.input.is_object() {
                return Err(invalid(
                    format!("{at}.calls[{i}].input"),
                    "a tool call's `input` must be a JSON object, e.g. `{\"city\": \"Paris\"}`",
                ));
            }
        }
        Ok(())
    }

    /// The bounds on everything that sizes an answer, so that no scenario can make the server
    /// allocate more than a sane test needs.
    fn check_sizes(&self, at: &str) -> Result<(), Invalid> {
        let field = |name: &str| format!("{at}.{name}");
        let too_many = |name: &str, n: u64| {
            invalid(field(name), format!("`{name}` must be at most {MAX_CHUNKS} (the chaos server's limit), not {n}"))
        };
        if let Some(n) = self.chunks.filter(|n| *n > MAX_CHUNKS) {
            return Err(too_many("chunks", n.into()));
        }
        if let Some(n) = self.after_chunks.filter(|n| *n > MAX_CHUNKS) {
            return Err(too_many("after_chunks", n.into()));
        }
        let texts = [
            ("text", self.text.as_deref()),
            ("body", self.body.as_deref()),
            ("message", self.message.as_deref()),
            ("error_type", self.error_type.as_deref()),
            ("code", self.code.as_deref()),
            ("param", self.param.as_deref()),
            ("data", self.data.as_deref()),
            ("content_type", self.content_type.as_deref()),
        ];
        for (name, text) in texts {
            check_length(field(name), name, text.map_or(0, str::len))?;
        }
        for (name, value) in self.headers.iter().flatten() {
            check_length(field(&format!("headers.{name}")), &format!("headers.{name}"), value.len())?;
        }
        if let (Some(text), None, true) = (&self.text, self.chunks, self.kind != K::ToolUse) {
            let words = crate::step::Pieces::words(text).count();
            if words > MAX_CHUNKS as usize {
                return Err(invalid(
                    field("text"),
                    format!(
                        "`text` has {words} words, streamed one chunk per word: more than the {MAX_CHUNKS} \
                         chunks an answer may have; set `chunks` to at most {MAX_CHUNKS}"
                    ),
                ));
            }
        }
        self.check_call_sizes(at)
    }

    fn check_call_sizes(&self, at: &str) -> Result<(), Invalid> {
        let Some(calls) = &self.calls else {
            return Ok(());
        };
        if calls.len() > MAX_TOOL_CALLS {
            return Err(invalid(
                format!("{at}.calls"),
                format!("a `tool_use` step may have at most {MAX_TOOL_CALLS} calls, not {}", calls.len()),
            ));
        }
        let per_call = self.chunks.unwrap_or(ToolUse::DEFAULT_ARGUMENT_CHUNKS) as usize;
        let mut pieces = 0usize;
        for (i, call) in calls.iter().enumerate() {
            let json = call.input.to_string();
            check_length(format!("{at}.calls[{i}].input"), "input", json.len())?;
            pieces += per_call.min(json.chars().count()).max(1);
        }
        if pieces > MAX_CHUNKS as usize {
            return Err(invalid(
                format!("{at}.chunks"),
                format!(
                    "the calls' arguments would stream in {pieces} chunks in all, more than the {MAX_CHUNKS} \
                     an answer may have; lower `chunks`"
                ),
            ));
        }
        Ok(())
    }

    fn headers_checked(&self, at: &str) -> Result<Vec<(String, String)>, Invalid> {
        let Some(headers) = &self.headers else {
            return Ok(Vec::new());
        };
        for (name, value) in headers {
            if !valid_header_name(name) {
                return Err(invalid(
                    format!("{at}.headers"),
                    format!("{name:?} is not a valid header name: use letters, digits and `-`"),
                ));
            }
            if !valid_header_value(value) {
                return Err(invalid(format!("{at}.headers.{name}"), "a header value must not contain CR, LF or NUL"));
            }
        }
        Ok(headers.iter().map(|(n, v)| (n.clone(), v.clone())).collect())
    }

    /// The JSON form of a step (`times` is set by the caller).
    fn of(step: &Step) -> Self {
        let mut spec = Self::empty(step.kind());
        match step {
            Step::Ok(reply) => spec.set_reply(reply),
            Step::HttpError(e) | Step::ContextOverflow(e) | Step::InvalidApiKey(e) => {
                let preset_status = match step.kind() {
                    K::ContextOverflow => Some(400),
                    K::InvalidApiKey => Some(401),
                    _ => None,
                };
                spec.status = (preset_status != Some(e.status)).then_some(e.status);
                spec.retry_after = e.retry_after.clone().map(RetryAfter);
                spec.retry_after_ms = e.retry_after_ms;
                spec.x_should_retry = e.should_retry;
                spec.set_headers(&e.headers);
                spec.error_type.clone_from(&e.error_type);
                spec.message.clone_from(&e.message);
                spec.code.clone_from(&e.code);
                spec.param.clone_from(&e.param);
                spec.body.clone_from(&e.body);
                spec.endless_body = e.endless.map(|_| true);
                spec.interval_ms = e.endless.filter(|ms| *ms != DEFAULT_INTERVAL_MS);
                spec.echo_key = e.echo_key;
            }
            Step::CloseBeforeHeaders => {}
            Step::DropStream(i) | Step::Truncate(i) => {
                spec.after_chunks = Some(i.after_chunks);
                spec.set_reply(&i.reply);
            }
            Step::SseError(s) => {
                spec.after_chunks = Some(s.after_chunks);
                spec.set_reply(&s.reply);
                spec.error_type.clone_from(&s.error_type);
                spec.message.clone_from(&s.message);
                spec.code.clone_from(&s.code);
                spec.status = s.status;
                spec.echo_key = s.echo_key;
            }
            Step::Stall(s) => {
                spec.ms = Some(s.ms);
                spec.after_chunks = s.after_chunks;
                spec.set_reply(&s.reply);
            }
            Step::Hang(h) => {
                match h.at {
                    HangAt::BeforeHeaders => {}
                    HangAt::InHeaders => spec.at = Some(HangAtSpec::In),
                    HangAt::AfterHeaders => spec.at = Some(HangAtSpec::After),
                    HangAt::AfterChunks(k) => spec.after_chunks = Some(k),
                }
                spec.set_reply(&h.reply);
            }
            Step::MalformedChunk(m) => {
                spec.after_chunks = Some(m.after_chunks);
                spec.set_reply(&m.reply);
                spec.data.clone_from(&m.data);
            }
            Step::ToolUse(t) => {
                let calls =
                    t.calls.iter().map(|(name, input)| ToolCallSpec { name: name.clone(), input: input.clone() });
                spec.calls = Some(calls.collect());
                spec.text.clone_from(&t.text);
                spec.chunks = (t.argument_chunks != ToolUse::DEFAULT_ARGUMENT_CHUNKS).then_some(t.argument_chunks);
                spec.set_headers(&t.headers);
            }
            Step::KeepAliveFlood(f) => {
                spec.after_chunks = f.after_chunks;
                spec.set_interval(f.interval_ms);
                spec.ping = f.ping.then_some(true);
                spec.set_reply(&f.reply);
            }
            Step::EmptyChunkFlood(f) => {
                spec.after_chunks = (f.after_chunks != 0).then_some(f.after_chunks);
                spec.set_interval(f.interval_ms);
                spec.set_reply(&f.reply);
            }
            Step::EndlessText(e) => {
                spec.set_interval(e.interval_ms);
                spec.set_reply(&e.reply);
            }
            Step::EndlessJson(e) => {
                spec.set_interval(e.interval_ms);
                spec.set_headers(&e.headers);
            }
            Step::WrongContentType(w) => {
                spec.content_type =
                    (w.content_type != WrongContentType::DEFAULT_CONTENT_TYPE).then(|| w.content_type.clone());
                spec.body = (w.body != WrongContentType::DEFAULT_BODY).then(|| w.body.clone());
                spec.set_headers(&w.headers);
            }
        }
        spec
    }

    fn set_interval(&mut self, ms: u64) {
        self.interval_ms = (ms != DEFAULT_INTERVAL_MS).then_some(ms);
    }

    fn set_reply(&mut self, reply: &Reply) {
        self.text = (reply.text != DEFAULT_TEXT).then(|| reply.text.clone());
        self.chunks = reply.chunks;
        self.chunk_delay_ms = (reply.chunk_delay_ms != 0).then_some(reply.chunk_delay_ms);
        self.set_headers(&reply.headers);
    }

    fn set_headers(&mut self, headers: &[(String, String)]) {
        self.headers = (!headers.is_empty()).then(|| headers.iter().cloned().collect());
    }
}

impl From<&Scenario> for ScenarioSpec {
    fn from(scenario: &Scenario) -> Self {
        let steps = scenario
            .steps()
            .map(|(step, times)| {
                let mut spec = StepSpec::of(step);
                spec.times = (times != 1).then_some(times);
                spec
            })
            .collect();
        let default = scenario.default_step();
        let is_plain_ok = matches!(default, Step::Ok(reply) if *reply == Reply::default());
        Self { steps, default: (!is_plain_ok).then(|| StepSpec::of(default)) }
    }
}

/// The JSON form of a [`Scenario`] lives here, with its checks: the scenario itself knows nothing of
/// files.
impl Scenario {
    /// Parse a scenario from JSON (format in the [crate docs](crate#scenario-files)).
    ///
    /// # Errors
    ///
    /// [`ScenarioError::Invalid`] naming the field (`steps[1].status`) and, for syntax and type
    /// errors, the line and column.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_chaos::Scenario;
    ///
    /// let scenario = Scenario::from_json_str(r#"{"steps": [{"kind": "http_error", "status": 503}]}"#)?;
    /// assert_eq!(scenario.steps().len(), 1);
    ///
    /// let err = Scenario::from_json_str(r#"{"steps": [{"kind": "http_error", "staus": 503}]}"#)
    ///     .unwrap_err();
    /// assert_eq!(err.field(), Some("steps[0].staus"));
    /// # Ok::<(), agentic_chaos::ScenarioError>(())
    /// ```
    pub fn from_json_str(json: &str) -> Result<Self, ScenarioError> {
        parse(json, None)
    }

    /// Read and parse a scenario file.
    ///
    /// # Errors
    ///
    /// [`ScenarioError::Read`] if the file cannot be read; [`ScenarioError::Invalid`] naming the
    /// file, the field and (where serde knows it) the line and column.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ScenarioError> {
        let path = path.as_ref();
        let json =
            std::fs::read_to_string(path).map_err(|source| ScenarioError::Read { path: path.to_path_buf(), source })?;
        parse(&json, Some(path))
    }

    /// The scenario as pretty JSON, in the format that [`Scenario::from_json_str`] reads.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a scenario always serializes")
    }
}

impl std::str::FromStr for Scenario {
    type Err = ScenarioError;

    fn from_str(json: &str) -> Result<Self, Self::Err> {
        Self::from_json_str(json)
    }
}

impl Serialize for Scenario {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ScenarioSpec::from(self).serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_pick_the_nearest_name() {
        let m = with_suggestion("unknown field `staus`, expected one of `kind`, `status`".into());
        assert!(m.ends_with("; did you mean `status`?"), "{m}");
        let m = with_suggestion("unknown field `zzzzzz`, expected one of `kind`, `status`".into());
        assert!(!m.contains("did you mean"), "{m}");
    }
}
