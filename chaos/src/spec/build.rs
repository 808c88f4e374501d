//! A checked step's construction: one arm per kind, which finds the values the kind cannot do
//! without (a missing one is the only failure left, `check` having vouched for every value given).

use super::invalid::{Invalid, required, shape};
use super::model::{HangAtSpec, StepSpec, StopSpec};
use crate::step::{
    BadHead, BareJsonError, Completion, DEFAULT_INTERVAL_MS, DEFAULT_TEXT, EmptyChunkFlood, EndlessJson, EndlessText,
    Hang, HangAt, HttpError, Interrupt, InterruptKind, KeepAliveFlood, Malformed, MalformedShape, NotAnAnswer, Preset,
    Redirect, SseError, Stall, Step, StepKind, ToolUse, WrongContentType,
};

/// The step `spec` describes; `at` names it in errors (`steps[2]`, `default`).
pub(super) fn step(spec: StepSpec, at: &str) -> Result<Step, Invalid> {
    const NEEDS_STATUS: &str = "an `http_error` step needs a `status`, e.g. `\"status\": 429`";
    const NEEDS_MS: &str = "a `stall` step needs `ms`, the pause in milliseconds, e.g. `\"ms\": 50`";
    let headers: Vec<(String, String)> = spec.headers.clone().into_iter().flatten().collect();
    let completion = completion(&spec, headers.clone());
    let after = spec.after_chunks.unwrap_or(0);
    let interval_ms = spec.interval_ms.unwrap_or(DEFAULT_INTERVAL_MS);
    Ok(match spec.kind {
        StepKind::Ok => Step::Ok(completion),
        StepKind::HttpError => {
            let status = required(spec.status, at, "status", NEEDS_STATUS)?;
            http_error(spec, Preset::Generic, status, headers).into()
        }
        StepKind::ContextOverflow => {
            let status = spec.status.unwrap_or(400);
            http_error(spec, Preset::ContextOverflow, status, headers).into()
        }
        StepKind::InvalidApiKey => {
            let status = spec.status.unwrap_or(401);
            http_error(spec, Preset::InvalidApiKey, status, headers).into()
        }
        StepKind::CloseBeforeHeaders => Step::CloseBeforeHeaders,
        StepKind::DropStream => Interrupt { after_chunks: after, kind: InterruptKind::Drop, completion }.into(),
        StepKind::Truncate => Interrupt { after_chunks: after, kind: InterruptKind::Truncate, completion }.into(),
        StepKind::SseError => Step::SseError(SseError {
            after_chunks: after,
            completion,
            error_type: spec.error_type,
            message: spec.message,
            code: spec.code,
            status: spec.status,
            echo_key: spec.echo_key,
        }),
        StepKind::Stall => {
            let ms = required(spec.ms, at, "ms", NEEDS_MS)?;
            Step::Stall(Stall { ms, after_chunks: spec.after_chunks, completion })
        }
        StepKind::Hang => Step::Hang(Hang { at: hang_at(&spec), completion }),
        StepKind::MalformedChunk => {
            let shape = shape(&spec, at, MalformedShape::ALL.iter().map(|s| (s.as_str(), *s)))?.unwrap_or_default();
            Step::MalformedChunk(Malformed { after_chunks: after, completion, data: spec.data, shape })
        }
        StepKind::ToolUse => Step::ToolUse(ToolUse {
            calls: spec.calls.into_iter().flatten().map(|call| (call.name, call.input)).collect(),
            text: spec.text,
            argument_chunks: spec.chunks.unwrap_or(ToolUse::DEFAULT_ARGUMENT_CHUNKS),
            headers,
            usage: spec.usage.unwrap_or_default(),
            reasoning: spec.reasoning,
        }),
        StepKind::KeepAliveFlood => Step::KeepAliveFlood(KeepAliveFlood {
            after_chunks: spec.after_chunks,
            interval_ms,
            ping: spec.ping == Some(true),
            completion,
        }),
        StepKind::EmptyChunkFlood => {
            Step::EmptyChunkFlood(EmptyChunkFlood { after_chunks: after, interval_ms, completion })
        }
        StepKind::EndlessText => Step::EndlessText(EndlessText { interval_ms, completion }),
        StepKind::EndlessJson => Step::EndlessJson(EndlessJson { interval_ms, headers }),
        StepKind::WrongContentType => Step::WrongContentType(WrongContentType {
            content_type: spec.content_type.unwrap_or_else(|| WrongContentType::DEFAULT_CONTENT_TYPE.to_owned()),
            body: spec.body.unwrap_or_else(|| WrongContentType::DEFAULT_BODY.to_owned()),
            headers,
        }),
        StepKind::Redirect => Step::Redirect(Redirect {
            status: spec.status.unwrap_or(Redirect::DEFAULT_STATUS),
            location: spec.location,
            headers,
        }),
        StepKind::NotAnAnswer => {
            Step::NotAnAnswer(shape(&spec, at, NotAnAnswer::ALL.iter().map(|s| (s.as_str(), *s)))?.unwrap_or_default())
        }
        StepKind::BadHead => {
            Step::BadHead(shape(&spec, at, BadHead::ALL.iter().map(|s| (s.as_str(), *s)))?.unwrap_or_default())
        }
        StepKind::BareJsonError => Step::BareJsonError(BareJsonError {
            error_type: spec.error_type,
            message: spec.message,
            code: spec.code,
            headers,
        }),
    })
}

/// The text of the answer (or of the part a fault sends first) and how it is streamed.
fn completion(spec: &StepSpec, headers: Vec<(String, String)>) -> Completion {
    Completion {
        text: spec.text.clone().unwrap_or_else(|| DEFAULT_TEXT.to_owned()),
        chunks: spec.chunks,
        chunk_delay_ms: spec.chunk_delay_ms.unwrap_or(0),
        headers,
        usage: spec.usage.unwrap_or_default(),
        cut_by_token_limit: spec.stop == Some(StopSpec::Length),
        reasoning: spec.reasoning.clone(),
        calls: spec.calls.iter().flatten().map(|call| (call.name.clone(), call.input.clone())).collect(),
        argument_chunks: spec.argument_chunks.unwrap_or(ToolUse::DEFAULT_ARGUMENT_CHUNKS),
    }
}

/// An HTTP error answer with `status` and the `preset` body, refined by the spec's fields.
fn http_error(spec: StepSpec, preset: Preset, status: u16, headers: Vec<(String, String)>) -> HttpError {
    HttpError {
        status,
        preset,
        retry_after: spec.retry_after.map(|r| r.0),
        retry_after_ms: spec.retry_after_ms,
        should_retry: spec.x_should_retry,
        headers,
        error_type: spec.error_type,
        message: spec.message,
        code: spec.code,
        param: spec.param,
        body: spec.body,
        endless: (spec.endless_body == Some(true)).then_some(spec.interval_ms.unwrap_or(DEFAULT_INTERVAL_MS)),
        echo_key: spec.echo_key,
        stall_body_after: spec.stall_body_after,
        stated_limit: spec.stated_limit,
    }
}

/// Where a `hang` step falls silent: after `after_chunks` chunks, or `at` (before the headers unless
/// set); the checks refuse both at once.
fn hang_at(spec: &StepSpec) -> HangAt {
    match (spec.at, spec.after_chunks) {
        (_, Some(k)) => HangAt::AfterChunks(k),
        (None | Some(HangAtSpec::Before), None) => HangAt::BeforeHeaders,
        (Some(HangAtSpec::In), None) => HangAt::InHeaders,
        (Some(HangAtSpec::After), None) => HangAt::AfterHeaders,
        (Some(HangAtSpec::AfterStart), None) => HangAt::AfterStart,
    }
}
