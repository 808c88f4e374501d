//! A built scenario's JSON form: each step as the flat object a file would hold, with only the
//! fields that differ from their defaults.

use super::model::{HangAtSpec, OutageSpec, RateLimitSpec, RetryAfter, ScenarioSpec, StepSpec, StopSpec, ToolCallSpec};
use crate::outage::{self, Outage};
use crate::rate_limit::{DEFAULT_RATE_WINDOW, RateLimit};
use crate::scenario::Scenario;
use crate::step::{
    BadHead, Completion, DEFAULT_INTERVAL_MS, DEFAULT_TEXT, HangAt, HttpError, MalformedShape, NotAnAnswer, Redirect,
    SseError, Step, StepKind, ToolUse, WrongContentType,
};
use crate::usage::TokenUsage;

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
        let is_plain_ok = matches!(default, Step::Ok(completion) if *completion == Completion::default());
        Self {
            context_window: scenario.context_window(),
            outages: scenario.outages().iter().map(OutageSpec::from).collect(),
            rate_limit: scenario.rate_limit().map(RateLimitSpec::from),
            per_conversation: scenario.is_per_conversation(),
            steps,
            default: (!is_plain_ok).then(|| StepSpec::of(default)),
        }
    }
}

impl From<&RateLimit> for RateLimitSpec {
    /// The window in whole milliseconds (a window is at least 1 ms), only when it is not a minute.
    fn from(limit: &RateLimit) -> Self {
        let window = limit.window_length();
        Self {
            requests: limit.max_requests(),
            tokens: limit.max_tokens(),
            input_tokens: limit.max_input_tokens(),
            output_tokens: limit.max_output_tokens(),
            window_ms: (window != DEFAULT_RATE_WINDOW).then(|| u64::try_from(window.as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

impl From<&Outage> for OutageSpec {
    /// The window in whole milliseconds; the step only when it is not the default 503.
    fn from(outage: &Outage) -> Self {
        let ms = |at: std::time::Duration| u64::try_from(at.as_millis()).unwrap_or(u64::MAX);
        Self {
            from_ms: ms(outage.from()),
            until_ms: ms(outage.until()),
            step: (*outage.step() != outage::default_step()).then(|| StepSpec::of(outage.step())),
        }
    }
}

impl StepSpec {
    /// The JSON form of a step (`times` is set by the caller).
    fn of(step: &Step) -> Self {
        let mut spec = Self::empty(step.kind());
        match step {
            Step::Ok(completion) => spec.set_completion(completion),
            Step::HttpError(e) | Step::ContextOverflow(e) | Step::InvalidApiKey(e) => {
                spec.set_http_error(step.kind(), e);
            }
            Step::CloseBeforeHeaders => {}
            Step::DropStream(i) | Step::Truncate(i) => {
                spec.after_chunks = Some(i.after_chunks);
                spec.set_completion(&i.completion);
            }
            Step::SseError(s) => spec.set_sse_error(s),
            Step::Stall(s) => {
                spec.ms = Some(s.ms);
                spec.after_chunks = s.after_chunks;
                spec.set_completion(&s.completion);
            }
            Step::Hang(h) => {
                match h.at {
                    HangAt::BeforeHeaders => {}
                    HangAt::InHeaders => spec.at = Some(HangAtSpec::In),
                    HangAt::AfterHeaders => spec.at = Some(HangAtSpec::After),
                    HangAt::AfterStart => spec.at = Some(HangAtSpec::AfterStart),
                    HangAt::AfterChunks(k) => spec.after_chunks = Some(k),
                }
                spec.set_completion(&h.completion);
            }
            Step::MalformedChunk(m) => {
                spec.after_chunks = Some(m.after_chunks);
                spec.set_completion(&m.completion);
                spec.data.clone_from(&m.data);
                spec.set_shape(m.shape.as_str(), MalformedShape::default().as_str());
            }
            Step::ToolUse(t) => spec.set_tool_use(t),
            Step::KeepAliveFlood(f) => {
                spec.after_chunks = f.after_chunks;
                spec.set_interval(f.interval_ms);
                spec.ping = f.ping.then_some(true);
                spec.set_completion(&f.completion);
            }
            Step::EmptyChunkFlood(f) => {
                spec.after_chunks = (f.after_chunks != 0).then_some(f.after_chunks);
                spec.set_interval(f.interval_ms);
                spec.set_completion(&f.completion);
            }
            Step::EndlessText(e) => {
                spec.set_interval(e.interval_ms);
                spec.set_completion(&e.completion);
            }
            Step::EndlessJson(e) => {
                spec.set_interval(e.interval_ms);
                spec.set_headers(&e.headers);
            }
            Step::WrongContentType(w) => spec.set_wrong_content_type(w),
            Step::Redirect(r) => {
                spec.status = (r.status != Redirect::DEFAULT_STATUS).then_some(r.status);
                spec.location.clone_from(&r.location);
                spec.set_headers(&r.headers);
            }
            Step::NotAnAnswer(shape) => spec.set_shape(shape.as_str(), NotAnAnswer::default().as_str()),
            Step::BadHead(shape) => spec.set_shape(shape.as_str(), BadHead::default().as_str()),
            Step::BareJsonError(e) => {
                spec.error_type.clone_from(&e.error_type);
                spec.message.clone_from(&e.message);
                spec.code.clone_from(&e.code);
                spec.set_headers(&e.headers);
            }
        }
        spec
    }

    /// An HTTP error of `kind`: its status only when it is not the kind's own (400, 401).
    fn set_http_error(&mut self, kind: StepKind, e: &HttpError) {
        let preset_status = match kind {
            StepKind::ContextOverflow => Some(400),
            StepKind::InvalidApiKey => Some(401),
            _ => None,
        };
        self.status = (preset_status != Some(e.status)).then_some(e.status);
        self.retry_after = e.retry_after.clone().map(RetryAfter);
        self.retry_after_ms = e.retry_after_ms;
        self.x_should_retry = e.should_retry;
        self.set_headers(&e.headers);
        self.error_type.clone_from(&e.error_type);
        self.message.clone_from(&e.message);
        self.code.clone_from(&e.code);
        self.param.clone_from(&e.param);
        self.body.clone_from(&e.body);
        self.endless_body = e.endless.map(|_| true);
        self.interval_ms = e.endless.filter(|ms| *ms != DEFAULT_INTERVAL_MS);
        self.echo_key = e.echo_key;
        self.stall_body_after = e.stall_body_after;
        self.stated_limit = e.stated_limit;
    }

    fn set_sse_error(&mut self, s: &SseError) {
        self.after_chunks = Some(s.after_chunks);
        self.set_completion(&s.completion);
        self.error_type.clone_from(&s.error_type);
        self.message.clone_from(&s.message);
        self.code.clone_from(&s.code);
        self.status = s.status;
        self.echo_key = s.echo_key;
    }

    /// The calls; `chunks` only when it is not [`ToolUse::DEFAULT_ARGUMENT_CHUNKS`].
    fn set_tool_use(&mut self, t: &ToolUse) {
        let calls = t.calls.iter().map(|(name, input)| ToolCallSpec { name: name.clone(), input: input.clone() });
        self.calls = Some(calls.collect());
        self.text.clone_from(&t.text);
        self.chunks = (t.argument_chunks != ToolUse::DEFAULT_ARGUMENT_CHUNKS).then_some(t.argument_chunks);
        self.set_headers(&t.headers);
        self.set_usage(t.usage);
        self.reasoning.clone_from(&t.reasoning);
    }

    fn set_wrong_content_type(&mut self, w: &WrongContentType) {
        self.content_type = (w.content_type != WrongContentType::DEFAULT_CONTENT_TYPE).then(|| w.content_type.clone());
        self.body = (w.body != WrongContentType::DEFAULT_BODY).then(|| w.body.clone());
        self.set_headers(&w.headers);
    }

    /// The shape's name, unless it is the kind's default.
    fn set_shape(&mut self, name: &str, default: &str) {
        self.shape = (name != default).then(|| name.to_owned());
    }

    fn set_interval(&mut self, ms: u64) {
        self.interval_ms = (ms != DEFAULT_INTERVAL_MS).then_some(ms);
    }

    fn set_completion(&mut self, completion: &Completion) {
        self.text = (completion.text != DEFAULT_TEXT).then(|| completion.text.clone());
        self.chunks = completion.chunks;
        self.chunk_delay_ms = (completion.chunk_delay_ms != 0).then_some(completion.chunk_delay_ms);
        self.set_headers(&completion.headers);
        self.set_usage(completion.usage);
        self.stop = completion.cut_by_token_limit.then_some(StopSpec::Length);
        self.reasoning.clone_from(&completion.reasoning);
        if !completion.calls.is_empty() {
            let calls =
                completion.calls.iter().map(|(name, input)| ToolCallSpec { name: name.clone(), input: input.clone() });
            self.calls = Some(calls.collect());
            self.argument_chunks =
                (completion.argument_chunks != ToolUse::DEFAULT_ARGUMENT_CHUNKS).then_some(completion.argument_chunks);
        }
    }

    /// The pinned counts, when any is.
    fn set_usage(&mut self, usage: TokenUsage) {
        self.usage = (!usage.is_rule()).then_some(usage);
    }

    fn set_headers(&mut self, headers: &[(String, String)]) {
        self.headers = (!headers.is_empty()).then(|| headers.iter().cloned().collect());
    }
}
