//! A checked scenario's construction: it cannot fail, since `check` has vouched for every value and
//! found the ones a kind requires.

use super::check::{Checked, CheckedKind, CheckedScenario};
use super::model::{HangAtSpec, StepSpec, StopSpec};
use crate::outage::Outage;
use crate::scenario::Scenario;
use crate::step::{
    BareJsonError, Completion, DEFAULT_INTERVAL_MS, DEFAULT_TEXT, EmptyChunkFlood, EndlessJson, EndlessText, Hang,
    HangAt, HttpError, Interrupt, InterruptKind, KeepAliveFlood, Malformed, Preset, Redirect, SseError, Stall, Step,
    ToolUse, WrongContentType,
};

impl From<CheckedScenario> for Scenario {
    fn from(checked: CheckedScenario) -> Self {
        let mut scenario = Scenario::new();
        for (times, step) in checked.steps {
            scenario = scenario.then_times(times, step);
        }
        if let Some(step) = checked.default {
            scenario = scenario.otherwise(step);
        }
        if let Some(limit) = checked.rate_limit {
            scenario = scenario.with_rate_limit(limit);
        }
        if let Some(bytes) = checked.context_window {
            scenario = scenario.with_context_window(bytes);
        }
        for window in checked.outages {
            let outage = Outage::new(window.from, window.until);
            scenario = scenario.with_outage(match window.step {
                Some(step) => outage.with_step(step),
                None => outage,
            });
        }
        scenario
    }
}

impl From<Checked> for Step {
    fn from(checked: Checked) -> Self {
        let Checked { spec, kind } = checked;
        let headers: Vec<(String, String)> = spec.headers.clone().into_iter().flatten().collect();
        let completion = completion(&spec, headers.clone());
        let after = spec.after_chunks.unwrap_or(0);
        let interval_ms = spec.interval_ms.unwrap_or(DEFAULT_INTERVAL_MS);
        match kind {
            CheckedKind::Ok => Step::Ok(completion),
            CheckedKind::HttpError { status } => http_error(spec, Preset::Generic, status, headers).into(),
            CheckedKind::ContextOverflow => {
                let status = spec.status.unwrap_or(400);
                http_error(spec, Preset::ContextOverflow, status, headers).into()
            }
            CheckedKind::InvalidApiKey => {
                let status = spec.status.unwrap_or(401);
                http_error(spec, Preset::InvalidApiKey, status, headers).into()
            }
            CheckedKind::CloseBeforeHeaders => Step::CloseBeforeHeaders,
            CheckedKind::DropStream => Interrupt { after_chunks: after, kind: InterruptKind::Drop, completion }.into(),
            CheckedKind::Truncate => {
                Interrupt { after_chunks: after, kind: InterruptKind::Truncate, completion }.into()
            }
            CheckedKind::SseError => Step::SseError(SseError {
                after_chunks: after,
                completion,
                error_type: spec.error_type,
                message: spec.message,
                code: spec.code,
                status: spec.status,
                echo_key: spec.echo_key,
            }),
            CheckedKind::Stall { ms } => Step::Stall(Stall { ms, after_chunks: spec.after_chunks, completion }),
            CheckedKind::Hang => Step::Hang(Hang { at: hang_at(&spec), completion }),
            CheckedKind::MalformedChunk { shape } => {
                Step::MalformedChunk(Malformed { after_chunks: after, completion, data: spec.data, shape })
            }
            CheckedKind::ToolUse => Step::ToolUse(ToolUse {
                calls: spec.calls.into_iter().flatten().map(|call| (call.name, call.input)).collect(),
                text: spec.text,
                argument_chunks: spec.chunks.unwrap_or(ToolUse::DEFAULT_ARGUMENT_CHUNKS),
                headers,
                usage: spec.usage.unwrap_or_default(),
            }),
            CheckedKind::KeepAliveFlood => Step::KeepAliveFlood(KeepAliveFlood {
                after_chunks: spec.after_chunks,
                interval_ms,
                ping: spec.ping == Some(true),
                completion,
            }),
            CheckedKind::EmptyChunkFlood => {
                Step::EmptyChunkFlood(EmptyChunkFlood { after_chunks: after, interval_ms, completion })
            }
            CheckedKind::EndlessText => Step::EndlessText(EndlessText { interval_ms, completion }),
            CheckedKind::EndlessJson => Step::EndlessJson(EndlessJson { interval_ms, headers }),
            CheckedKind::WrongContentType => Step::WrongContentType(WrongContentType {
                content_type: spec.content_type.unwrap_or_else(|| WrongContentType::DEFAULT_CONTENT_TYPE.to_owned()),
                body: spec.body.unwrap_or_else(|| WrongContentType::DEFAULT_BODY.to_owned()),
                headers,
            }),
            CheckedKind::Redirect => Step::Redirect(Redirect {
                status: spec.status.unwrap_or(Redirect::DEFAULT_STATUS),
                location: spec.location,
                headers,
            }),
            CheckedKind::NotAnAnswer { shape } => Step::NotAnAnswer(shape),
            CheckedKind::BadHead { shape } => Step::BadHead(shape),
            CheckedKind::BareJsonError => Step::BareJsonError(BareJsonError {
                error_type: spec.error_type,
                message: spec.message,
                code: spec.code,
                headers,
            }),
        }
    }
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
