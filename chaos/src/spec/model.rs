//! The flat, typo-proof model of a scenario file: every step is one object (`kind` plus the fields
//! that kind takes), so that serde reports a wrong type with its exact path and line; which kinds
//! take which field is listed here too ([`kinds_taking`]), and checked in `check`.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::step::{EchoKey, StatedLimit, StepKind, valid_header_value};
use crate::usage::TokenUsage;

/// A scenario file: `{"context_window": 2000, "outages": [...], "rate_limit": {...},
/// "per_conversation": true, "steps": [...], "default": {...}}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ScenarioSpec {
    /// The context window in bytes; checked to be at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) context_window: Option<usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) outages: Vec<OutageSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) rate_limit: Option<RateLimitSpec>,
    /// Each conversation has its own place in the script.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(super) per_conversation: bool,
    #[serde(default)]
    pub(super) steps: Vec<StepSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) default: Option<StepSpec>,
}

/// An outage window: `{"from_ms": 0, "until_ms": 3000, "step": {...}}`; checked to hold at least
/// one instant, within a day.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OutageSpec {
    #[serde(default)]
    pub(super) from_ms: u64,
    pub(super) until_ms: u64,
    /// A 503 without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) step: Option<StepSpec>,
}

/// A rate limit: `{"requests": 120, "tokens": 40000, "input_tokens": ..., "output_tokens": ...,
/// "window_ms": 60000}`; checked to limit something, each number at least 1, the window from
/// 1 ms to a day.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RateLimitSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) requests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) output_tokens: Option<u64>,
    /// A minute without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) window_ms: Option<u64>,
}

macro_rules! step_spec {
    ($($field:ident: $ty:ty,)*) => {
        /// One step: its kind and every field any kind takes, each optional.
        #[derive(Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(super) struct StepSpec {
            pub(super) kind: StepKind,
            $(#[serde(default, skip_serializing_if = "Option::is_none")]
            pub(super) $field: Option<$ty>,)*
        }

        impl StepSpec {
            /// A step of `kind` with no field set.
            pub(super) fn empty(kind: StepKind) -> Self {
                Self { kind, $($field: None,)* }
            }

            /// The names of the fields that are set, in declaration order.
            pub(super) fn present(&self) -> Vec<&'static str> {
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
    usage: TokenUsage,
    stop: StopSpec,
    location: String,
    stall_body_after: u64,
    shape: String,
    stated_limit: StatedLimit,
    reasoning: String,
    argument_chunks: u32,
}

/// Where a `hang` step falls silent, besides `after_chunks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum HangAtSpec {
    #[serde(rename = "before_headers")]
    Before,
    #[serde(rename = "in_headers")]
    In,
    #[serde(rename = "after_headers")]
    After,
    #[serde(rename = "after_start")]
    AfterStart,
}

/// Why an answer stops, when not at the end of its turn: `"length"`, the token limit cut it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum StopSpec {
    #[serde(rename = "length")]
    Length,
}

/// One call of a `tool_use` step: `{"name": "get_weather", "input": {"city": "Paris"}}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ToolCallSpec {
    pub(super) name: String,
    #[serde(default = "empty_object")]
    pub(super) input: serde_json::Value,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

use StepKind as K;

// The kinds that take a group of fields, for `kinds_taking`.

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
    K::Redirect,
    K::BareJsonError,
];
/// The faults that cut an answer part-way, which may show reasoning first and be a tool call.
const RICH_FAULTS: &[StepKind] = &[K::DropStream, K::Truncate, K::SseError, K::Stall, K::MalformedChunk];
/// The kinds whose answer may show reasoning first.
const REASONING: &[StepKind] =
    &[K::Ok, K::ToolUse, K::DropStream, K::Truncate, K::SseError, K::Stall, K::MalformedChunk];
/// The kinds whose answer may be tool calls.
const CALLS: &[StepKind] = &[K::ToolUse, K::DropStream, K::Truncate, K::SseError, K::Stall, K::MalformedChunk];

/// The kinds that answer with an HTTP error status.
pub(super) const HTTP: &[StepKind] = &[K::HttpError, K::ContextOverflow, K::InvalidApiKey];
const ERROR_BODY: &[StepKind] = &[K::HttpError, K::ContextOverflow, K::InvalidApiKey, K::SseError];

/// The kinds of step that take `field`.
pub(super) fn kinds_taking(field: &str) -> &'static [StepKind] {
    match field {
        "times" => StepKind::ALL,
        "text" | "chunks" | "usage" => TEXT,
        "chunk_delay_ms" => STREAMED,
        "calls" => CALLS,
        "reasoning" => REASONING,
        "argument_chunks" => RICH_FAULTS,
        "after_chunks" => MID_STREAM,
        "ms" => &[K::Stall],
        "status" => &[K::HttpError, K::ContextOverflow, K::InvalidApiKey, K::SseError, K::Redirect],
        "error_type" | "message" | "code" => {
            &[K::HttpError, K::ContextOverflow, K::InvalidApiKey, K::SseError, K::BareJsonError]
        }
        "retry_after" | "retry_after_ms" | "x_should_retry" | "param" | "endless_body" | "stall_body_after" => HTTP,
        "body" => &[K::HttpError, K::ContextOverflow, K::InvalidApiKey, K::WrongContentType],
        "echo_key" => ERROR_BODY,
        "headers" => HEADERS,
        "data" => &[K::MalformedChunk],
        "at" => &[K::Hang],
        "interval_ms" => INTERVAL,
        "ping" => &[K::KeepAliveFlood],
        // The kinds whose answer ends like an `ok` answer, with a stop reason.
        "stop" => &[K::Ok, K::Stall, K::MalformedChunk],
        "content_type" => &[K::WrongContentType],
        "location" => &[K::Redirect],
        "stated_limit" => &[K::HttpError],
        "shape" => &[K::NotAnAnswer, K::BadHead, K::MalformedChunk],
        _ => &[],
    }
}

/// A `retry_after` value: seconds as a number, or any header text such as an HTTP-date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RetryAfter(pub(super) String);

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
