//! One tool call's idempotency key and span: shared by the concurrent tool turn and the durable
//! one (which must not depend on each other).

use tracing::Span;
use tracing::field::Empty;

use crate::observe::semconv::EXECUTE_TOOL;
use crate::util::cut::shorten;

/// The idempotency key of the call `call_id` in `turn`: the id as it is when it is short and
/// plain, else its hash (a model's ids are its own: a hostile one must not make a key unbounded).
pub(crate) fn idempotency_key(turn: &str, call_id: &str) -> String {
    let plain =
        call_id.len() <= 64 && call_id.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"_-".contains(&byte));
    if plain && !call_id.is_empty() {
        format!("{turn}/{call_id}")
    } else {
        // FNV-1a: stable across processes and Rust versions, as a key kept by a tool must be.
        let hash = crate::util::fnv::fnv1a(call_id.as_bytes());
        format!("{turn}/h{hash:016x}")
    }
}

/// The span of one tool call, `execute_tool {name}`, in the OpenTelemetry GenAI conventions'
/// terms (docs/design.md §14). The arguments and the result are not recorded; a name longer than
/// a tool's 64 characters (a model's runaway) is shortened.
pub(crate) fn tool_span(name: &str, call_id: &str) -> Span {
    let name = shorten(name, 64);
    tracing::info_span!(
        EXECUTE_TOOL,
        otel.name = %format_args!("{EXECUTE_TOOL} {name}"),
        gen_ai.operation.name = EXECUTE_TOOL,
        gen_ai.tool.name = %name,
        gen_ai.tool.call.id = call_id,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// Marks a tool call's span as failed (the tool's error, its timeout or its panic: the model gets
/// the text, the span the kind).
pub(crate) fn record_tool_error(span: &Span) {
    span.record("error.type", "tool_error");
    span.record("otel.status_code", "ERROR");
}
