//! What the layers show to `tracing`, in the OpenTelemetry GenAI semantic conventions' terms
//! (docs/design.md §14): a span per exec and a CLIENT span per model call, with the metric events of
//! each call (named in [`semconv`], which an exporter such as `agentic-otel` records as instruments). (A decision's event is written by `retry.rs`, a
//! tool call's span by the toolbox.)
//!
//! Nothing here records a prompt, an answer or a key. With no subscriber, each span and event costs
//! one check of its callsite, and no field is computed.

use tokio::time::Instant;
use tracing::field::Empty;
use tracing::{Level, Span};

use crate::error::model_error::split_kind;
use crate::message::usage::Usage;
use crate::message::{AssistantMessage, Message};
use crate::observe::semconv::{self, INVOKE_AGENT, Semconv};
use crate::provider::Provider;

/// When a call's first content (text or a tool call) arrived: the time to first chunk of the
/// telemetry. Set once per call, with at most one reading of the clock.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) enum FirstChunk {
    /// No content came.
    #[default]
    None,
    /// It came before the call ever waited: no clock was read for it, and none could tell it from
    /// the call's end (the stream was ready at once).
    AtOnce,
    /// It came at this reading of the clock.
    At(Instant),
}

/// Counts a cooldown entered: a server asked the calls to `provider` to wait.
pub(crate) fn cooldown(provider: &str) {
    tracing::info!(target: semconv::METRICS_TARGET, parent: None, metric = semconv::COOLDOWNS, value = 1u64,
        gen_ai.provider.name = provider);
}

/// A call the pacer admitted, at once or after `wait` (`agentic.pacer.admitted`, and
/// `agentic.pacer.wait` for a wait).
pub(crate) fn paced(provider: &str, wait: std::time::Duration) {
    let waited = !wait.is_zero();
    tracing::info!(target: semconv::METRICS_TARGET, parent: None, metric = semconv::PACER_ADMITTED, value = 1u64,
        gen_ai.provider.name = provider, agentic.paced = if waited { "waited" } else { "at_once" });
    if waited {
        tracing::info!(target: semconv::METRICS_TARGET, parent: None, metric = semconv::PACER_WAIT, value = wait.as_secs_f64(),
            gen_ai.provider.name = provider);
    }
}

/// A count as an attribute: signed, because `tracing-opentelemetry` exports an unsigned field as a
/// string, and the conventions want integers.
pub(crate) fn int(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The span of one exec: `invoke_agent {function}`.
#[inline]
pub(crate) fn exec_span(function: Option<&'static str>, provider: &dyn Provider) -> Span {
    // With no subscriber (or none at INFO), no span: the check is one load.
    if !tracing::level_enabled!(Level::INFO) {
        return Span::none();
    }
    exec_span_wanted(function, provider)
}

#[cold]
fn exec_span_wanted(function: Option<&'static str>, provider: &dyn Provider) -> Span {
    tracing::info_span!(
        semconv::INVOKE_AGENT,
        otel.name = %function.map_or_else(|| INVOKE_AGENT.to_owned(), |name| format!("{INVOKE_AGENT} {name}")),
        gen_ai.operation.name = INVOKE_AGENT,
        gen_ai.agent.name = function,
        gen_ai.provider.name = provider.name(),
        gen_ai.request.model = provider.model(),
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_write.input_tokens = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        agentic.target = Empty,
        agentic.limit = Empty,
    )
}

/// Records how the exec ended on its span; `usage` and `target` (the target that answered or
/// failed last, with fallbacks) are asked only when the span is wanted.
#[inline]
pub(crate) fn record_exec<'t>(
    span: &Span,
    usage: impl FnOnce() -> Usage,
    target: impl FnOnce() -> Option<&'t str>,
    failure: Option<&'static str>,
) {
    if span.is_disabled() {
        return;
    }
    let usage = usage();
    record_usage(span, usage);
    if let Some(target) = target() {
        span.record("agentic.target", target);
    }
    if let Some(kind) = failure {
        span.record("error.type", kind);
        span.record("otel.status_code", "ERROR");
    }
}

/// The CLIENT span of model call number `call` of the exec whose span is `exec`: `chat {model}`;
/// `compacted` when the conversation it sends was compacted.
#[inline]
pub(crate) fn call_span(exec: &Span, provider: &dyn Provider, call: u32, compacted: bool) -> Span {
    if !tracing::level_enabled!(Level::INFO) {
        return Span::none();
    }
    call_span_wanted(exec, provider, call, compacted)
}

#[cold]
fn call_span_wanted(exec: &Span, provider: &dyn Provider, call: u32, compacted: bool) -> Span {
    // The fields are evaluated only when a subscriber wants the span.
    // A session's calls (no exec span) are children of whatever span the caller is in.
    tracing::info_span!(
        parent: exec.id().or_else(|| Span::current().id()),
        "chat",
        otel.name = %provider.model().map_or_else(|| "chat".to_owned(), |model| format!("chat {model}")),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider.name(),
        gen_ai.request.model = provider.model(),
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.response.time_to_first_chunk = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_write.input_tokens = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        server.address = provider.server().map(|(host, _)| host),
        server.port = provider.server().map(|(_, port)| i64::from(port)),
        agentic.call = i64::from(call),
        // The latest conventions' count of the request's resends: the exec's calls before this one.
        http.request.resend_count = (latest() && call > 1).then(|| i64::from(call - 1)),
        // The latest conventions' flag, set only when true (its absence says "not compacted").
        gen_ai.conversation.compacted = (latest() && compacted).then_some(true),
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// Records the call's outcome on its span, and its duration, time to first chunk and tokens as
/// metric events. `started` is when the call's time began to count: its limit's start, or its
/// first wait (no clock is read for it); a call that never waited took no time the clock could
/// see. `first` is when its first content came. Inlined: with no subscriber it is two checks.
#[inline]
pub(crate) fn record_call(
    span: &Span,
    provider: &dyn Provider,
    message: &AssistantMessage,
    started: Option<Instant>,
    first: FirstChunk,
) {
    // Asked here, after the call's span was made, and followed by the metric events: with per-layer
    // filters (`tracing-subscriber`), an `enabled!` check leaves the layers' verdict for the next
    // span or event, and a span made right after one of the metric target would be filtered as one.
    let metrics = tracing::enabled!(target: semconv::METRICS_TARGET, Level::INFO);
    if span.is_disabled() && !metrics {
        return;
    }
    record_call_wanted(span, provider, message, Times::of(started, first), metrics);
}

/// A call's times, in seconds: its duration, and the time to its first content if any came.
#[derive(Clone, Copy)]
struct Times {
    duration: f64,
    first_chunk: Option<f64>,
}

impl Times {
    /// Reads the clock once: the call ends now.
    fn of(started: Option<Instant>, first: FirstChunk) -> Self {
        let Some(started) = started else {
            // A call that never waited: all of it took no time the clock could see.
            let first_chunk = (first != FirstChunk::None).then_some(0.0);
            return Times { duration: 0.0, first_chunk };
        };
        let duration = started.elapsed();
        let first_chunk = match first {
            FirstChunk::None => None,
            // Ready with the rest: as far as any clock tells, at the call's end.
            FirstChunk::AtOnce => Some(duration),
            FirstChunk::At(at) => Some(at.saturating_duration_since(started)),
        };
        Times { duration: duration.as_secs_f64(), first_chunk: first_chunk.map(|first| first.as_secs_f64()) }
    }
}

#[cold]
fn record_call_wanted(span: &Span, provider: &dyn Provider, message: &AssistantMessage, times: Times, metrics: bool) {
    let error = message.is_error().then(|| error_type(message));
    if !span.is_disabled() {
        span.record("gen_ai.response.finish_reasons", message.stop_reason.name());
        if let Some(first_chunk) = times.first_chunk.filter(|_| latest()) {
            span.record("gen_ai.response.time_to_first_chunk", first_chunk);
        }
        if let Some(usage) = message.usage {
            record_usage(span, usage);
        }
        if let Some(error) = error {
            span.record("error.type", error);
            span.record("otel.status_code", "ERROR");
        }
    }
    if metrics {
        call_metrics(provider, message, error, times);
    }
}

fn call_metrics(provider: &dyn Provider, message: &AssistantMessage, error: Option<&str>, times: Times) {
    let (model, server) = (provider.model(), provider.server());
    let (address, port) = (server.map(|(host, _)| host), server.map(|(_, port)| port));
    tracing::info!(
        target: semconv::METRICS_TARGET,
        parent: None,
        metric = semconv::OPERATION_DURATION,
        value = times.duration,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider.name(),
        gen_ai.request.model = model,
        server.address = address,
        server.port = port.map(i64::from),
        error.type = error,
    );
    // Only the latest conventions have a name for it (`semconv::TIME_TO_FIRST_CHUNK`): today's
    // metrics layer skips the event. Every call streams, so every call with content has one.
    if let Some(first_chunk) = times.first_chunk {
        tracing::info!(
            target: semconv::METRICS_TARGET,
            parent: None,
            metric = semconv::TIME_TO_FIRST_CHUNK,
            value = first_chunk,
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = provider.name(),
            gen_ai.request.model = model,
            server.address = address,
            server.port = port.map(i64::from),
        );
    }
    let Some(usage) = message.usage else { return };
    // The cache kinds only when the server reported some: the latest GenAI conventions count them
    // (`semconv::INFERENCE_USAGE`); today's histogram knows `input` and `output` only and skips them.
    let cache = [("cache_read", usage.cache_read_input_tokens), ("cache_write", usage.cache_creation_input_tokens)];
    let kinds = [("input", usage.input_tokens), ("output", usage.output_tokens)];
    for (kind, tokens) in kinds.into_iter().chain(cache.into_iter().filter(|(_, tokens)| *tokens > 0)) {
        tracing::info!(
            target: semconv::METRICS_TARGET,
            parent: None,
            metric = semconv::TOKEN_USAGE,
            value = tokens,
            gen_ai.token.type = kind,
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = provider.name(),
            gen_ai.request.model = model,
            server.address = address,
            server.port = port.map(i64::from),
        );
    }
}

/// Records the model the server says answers on the current span, the call's (not kept otherwise).
pub(crate) fn record_response_model(model: &str) {
    Span::current().record("gen_ai.response.model", model);
}

/// Records the conversation sent and the answer on the call's span (only when the runtime was
/// asked to: `RuntimeBuilder::with_content_in_traces`).
pub(crate) fn record_content(span: &Span, history: &[Message], message: &AssistantMessage) {
    if span.is_disabled() {
        return;
    }
    let input: Vec<serde_json::Value> = history
        .iter()
        .map(|message| {
            let content = match message {
                Message::User { content } => content,
                Message::Assistant(assistant) => &assistant.content,
            };
            serde_json::json!({"role": message.role(), "content": content})
        })
        .collect();
    if let Ok(input) = serde_json::to_string(&input) {
        span.record("gen_ai.input.messages", input.as_str());
    }
    if let Ok(output) = serde_json::to_string(&message.content) {
        span.record("gen_ai.output.messages", output.as_str());
    }
}

fn record_usage(span: &Span, usage: Usage) {
    span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    if latest() {
        let cache = [
            ("gen_ai.usage.cache_read.input_tokens", usage.cache_read_input_tokens),
            ("gen_ai.usage.cache_write.input_tokens", usage.cache_creation_input_tokens),
        ];
        for (field, tokens) in cache.into_iter().filter(|(_, tokens)| *tokens > 0) {
            span.record(field, int(tokens));
        }
    }
}

/// Whether the spans carry the latest GenAI conventions' attributes too (`OTEL_SEMCONV_STABILITY_OPT_IN`,
/// read once per process): without the opt-in they are exactly today's.
fn latest() -> bool {
    Semconv::from_env() == Semconv::LatestExperimental
}

/// A failed call's `error.type`: its typed error's kind, or the kind its text starts with.
fn error_type(message: &AssistantMessage) -> &str {
    match &message.error {
        Some(error) => error.kind(),
        None => split_kind(message.error_text()).map_or("ModelError", |(kind, _)| kind),
    }
}
