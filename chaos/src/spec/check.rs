//! The checks of a parsed scenario: the rules a file must keep beyond its JSON types (which fields
//! a kind takes, ranges, fields that exclude each other, size limits), each failure naming the
//! field; a step that passes is built (`build`, which finds the values its kind requires), and the
//! scenario assembled from them. The first failure, in file order, is the one reported.

use std::time::Duration;

use super::build;
use super::invalid::{Invalid, invalid};
use super::model::{HTTP, OutageSpec, RateLimitSpec, ScenarioSpec, StepSpec, kinds_taking};
use crate::outage::{MAX_OUTAGE_MS, MAX_OUTAGES, Outage};
use crate::rate_limit::{MAX_RATE_WINDOW_MS, RateLimit};
use crate::scenario::Scenario;
use crate::step::{Pieces, Redirect, Step, StepKind, ToolUse, absolute_url, valid_header_name, valid_header_value};

use StepKind as K;

/// The most chunks an answer may have (`chunks`, `after_chunks`, the words of a `text` streamed one
/// per word, a `tool_use` step's argument pieces in all).
pub const MAX_CHUNKS: u32 = 100_000;

/// The longest text a scenario may give, in bytes (8 MiB): each of `text`, `body`, `message`,
/// `data`, a header value, a tool call's `input` as JSON.
pub const MAX_TEXT_BYTES: usize = 8 * 1024 * 1024;

/// The most calls a `tool_use` step may have.
pub const MAX_TOOL_CALLS: usize = 1_000;

/// Checks the context window, the outages, the rate limit, the steps in order, then the default
/// step; the scenario they make.
pub(super) fn scenario(spec: ScenarioSpec) -> Result<Scenario, Invalid> {
    if spec.context_window == Some(0) {
        return Err(invalid(
            "context_window".to_owned(),
            "`context_window` must be at least 1 byte (no conversation with any text fits in 0); \
             remove it for no limit",
        ));
    }
    let outages = outages(spec.outages)?;
    let rate_limit = spec.rate_limit.map(rate_limit).transpose()?;
    let mut scenario = Scenario::new();
    for (i, step) in spec.steps.into_iter().enumerate() {
        let at = format!("steps[{i}]");
        let times = step.times.unwrap_or(1);
        if times == 0 {
            return Err(invalid(format!("{at}.times"), "`times` must be at least 1; remove the step to skip it"));
        }
        scenario = scenario.then_times(times, self::step(step, &at)?);
    }
    match spec.default {
        Some(step) if step.times.is_some() => {
            return Err(invalid(
                "default.times".to_owned(),
                "the default step answers every request after the scripted steps; it takes no `times`",
            ));
        }
        Some(step) => scenario = scenario.otherwise(self::step(step, "default")?),
        None => {}
    }
    if let Some(limit) = rate_limit {
        scenario = scenario.with_rate_limit(limit);
    }
    if let Some(bytes) = spec.context_window {
        scenario = scenario.with_context_window(bytes);
    }
    if spec.per_conversation {
        scenario = scenario.per_conversation();
    }
    Ok(outages.into_iter().fold(scenario, Scenario::with_outage))
}

/// Checks each of a rate limit's numbers, that it has one, then its window.
fn rate_limit(spec: RateLimitSpec) -> Result<RateLimit, Invalid> {
    let RateLimitSpec { requests, tokens, input_tokens, output_tokens, window_ms } = spec;
    type Setter = fn(RateLimit, u64) -> RateLimit;
    let numbers: [(&str, Option<u64>, Setter); 4] = [
        ("requests", requests, RateLimit::requests),
        ("tokens", tokens, RateLimit::tokens),
        ("input_tokens", input_tokens, RateLimit::input_tokens),
        ("output_tokens", output_tokens, RateLimit::output_tokens),
    ];
    let mut limit = RateLimit::new();
    for (name, n, set) in numbers {
        match n {
            Some(0) => {
                return Err(invalid(
                    format!("rate_limit.{name}"),
                    format!("`{name}` must be at least 1 (no request would ever pass); remove it for no limit"),
                ));
            }
            Some(n) => limit = set(limit, n),
            None => {}
        }
    }
    if numbers.iter().all(|(_, n, _)| n.is_none()) {
        return Err(invalid(
            "rate_limit".to_owned(),
            "a rate limit needs at least one of `requests`, `tokens`, `input_tokens`, `output_tokens`",
        ));
    }
    match window_ms {
        Some(ms) if !(1..=MAX_RATE_WINDOW_MS).contains(&ms) => Err(invalid(
            "rate_limit.window_ms".to_owned(),
            format!("`window_ms` must be from 1 to {MAX_RATE_WINDOW_MS} (a day, the chaos server's limit), not {ms}"),
        )),
        Some(ms) => Ok(limit.window(Duration::from_millis(ms))),
        None => Ok(limit),
    }
}

/// Checks the number of outage windows, then each window's times and step.
fn outages(specs: Vec<OutageSpec>) -> Result<Vec<Outage>, Invalid> {
    if specs.len() > MAX_OUTAGES {
        return Err(invalid(
            "outages".to_owned(),
            format!("a scenario may have at most {MAX_OUTAGES} outages, not {}", specs.len()),
        ));
    }
    let mut outages = Vec::with_capacity(specs.len());
    for (i, spec) in specs.into_iter().enumerate() {
        let at = format!("outages[{i}]");
        for (name, ms) in [("from_ms", spec.from_ms), ("until_ms", spec.until_ms)] {
            if ms > MAX_OUTAGE_MS {
                return Err(invalid(
                    format!("{at}.{name}"),
                    format!("`{name}` must be at most {MAX_OUTAGE_MS} (a day, the chaos server's limit), not {ms}"),
                ));
            }
        }
        if spec.until_ms <= spec.from_ms {
            return Err(invalid(
                format!("{at}.until_ms"),
                format!(
                    "`until_ms` ({}) must be after `from_ms` ({}): the outage lasts from `from_ms` up to, \
                     not including, `until_ms`",
                    spec.until_ms, spec.from_ms
                ),
            ));
        }
        let outage = Outage::new(Duration::from_millis(spec.from_ms), Duration::from_millis(spec.until_ms));
        outages.push(match spec.step {
            Some(step) if step.times.is_some() => {
                return Err(invalid(
                    format!("{at}.step.times"),
                    "an outage's step answers every request of its window; it takes no `times`",
                ));
            }
            Some(step) => outage.with_step(self::step(step, &format!("{at}.step"))?),
            None => outage,
        });
    }
    Ok(outages)
}

/// Checks one step, then builds it; `at` names it in errors (`steps[2]`, `default`).
fn step(spec: StepSpec, at: &str) -> Result<Step, Invalid> {
    spec.check_fields(at)?;
    spec.check_values(at)?;
    spec.check_sizes(at)?;
    spec.check_headers(at)?;
    build::step(spec, at)
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

/// `kinds` for a message: `` `ok`, `hang` ``.
fn list(kinds: &[StepKind]) -> String {
    kinds.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
}

impl StepSpec {
    /// Every field that is set applies to the step's kind.
    fn check_fields(&self, at: &str) -> Result<(), Invalid> {
        for field in self.present() {
            let takes = kinds_taking(field);
            if !takes.contains(&self.kind) {
                return Err(invalid(
                    format!("{at}.{field}"),
                    format!("does not apply to a `{}` step; it applies to {}", self.kind, list(takes)),
                ));
            }
        }
        Ok(())
    }

    /// The checks of single values: ranges, fields that exclude each other, a tool-use step's calls.
    fn check_values(&self, at: &str) -> Result<(), Invalid> {
        let field = |name: &str| format!("{at}.{name}");
        if self.chunks == Some(0) {
            return Err(invalid(field("chunks"), "`chunks` must be at least 1"));
        }
        if let Some(status) = self.status.filter(|_| self.kind == K::Redirect) {
            if !Redirect::STATUSES.contains(&status) {
                return Err(invalid(
                    field("status"),
                    format!("a `redirect` step's `status` must be 301, 302, 303, 307 or 308, not {status}"),
                ));
            }
        } else if let Some(status) = self.status {
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
        if let Some(location) = &self.location {
            if !valid_header_value(location) {
                return Err(invalid(field("location"), "a header value must not contain CR, LF or NUL"));
            }
            if !absolute_url(location) {
                return Err(invalid(
                    field("location"),
                    format!(
                        "`location` must be an absolute URL, e.g. `http://127.0.0.1:9/v1/messages`, not {location:?}; \
                         remove it to redirect the request to its own URL"
                    ),
                ));
            }
        }
        if self.at.is_some() && self.after_chunks.is_some() {
            return Err(invalid(
                field("at"),
                "`at` and `after_chunks` exclude each other: `at` hangs before, in or after the headers \
                 or after the stream's opening event, `after_chunks` after some chunks of the body",
            ));
        }
        if self.interval_ms.is_some() && HTTP.contains(&self.kind) && self.endless_body != Some(true) {
            return Err(invalid(
                field("interval_ms"),
                "`interval_ms` paces an endless body: add `\"endless_body\": true`, or remove `interval_ms`",
            ));
        }
        if self.stated_limit.is_some() && self.body.is_some() {
            return Err(invalid(
                field("stated_limit"),
                "`stated_limit` is written into the provider-shaped body, and `body` replaces that body: \
                 keep one (write the `metadata` into your `body` yourself)",
            ));
        }
        if self.stall_body_after.is_some() && self.endless_body == Some(true) {
            return Err(invalid(
                field("stall_body_after"),
                "`stall_body_after` and `endless_body` exclude each other: `stall_body_after` stops a body of \
                 known length part-way, `endless_body` never ends one; keep one",
            ));
        }
        if self.kind == K::EndlessText && self.text.as_deref() == Some("") {
            return Err(invalid(
                field("text"),
                "an `endless_text` step needs a non-empty `text`: its chunks are sent over and over",
            ));
        }
        if self.kind == K::ToolUse || self.calls.is_some() {
            self.check_calls(at)?;
        }
        if self.argument_chunks.is_some() && self.calls.is_none() {
            return Err(invalid(
                field("argument_chunks"),
                "`argument_chunks` splits the arguments of the answer's tool calls: add `calls`, or remove it",
            ));
        }
        if self.argument_chunks == Some(0) {
            return Err(invalid(field("argument_chunks"), "`argument_chunks` must be at least 1"));
        }
        if self.reasoning.as_deref() == Some("") {
            return Err(invalid(
                field("reasoning"),
                "`reasoning` must not be empty: give the reasoning to stream before the answer, or remove it",
            ));
        }
        Ok(())
    }

    /// A `tool_use` step has calls, each with a name and an object as input.
    fn check_calls(&self, at: &str) -> Result<(), Invalid> {
        let calls = self.calls.as_deref().unwrap_or_default();
        if calls.is_empty() && self.kind == K::ToolUse {
            return Err(invalid(
                format!("{at}.calls"),
                "a `tool_use` step needs `calls`, e.g. `\"calls\": [{\"name\": \"get_weather\", \"input\": {\"city\": \"Paris\"}}]`",
            ));
        }
        if calls.is_empty() {
            return Err(invalid(
                format!("{at}.calls"),
                format!(
                    "`calls` is empty: give the tool calls the `{}` step's answer makes, e.g. \
                     `[{{\"name\": \"get_weather\", \"input\": {{\"city\": \"Paris\"}}}}]`, or remove it to cut a text answer",
                    self.kind
                ),
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
            ("location", self.location.as_deref()),
            ("shape", self.shape.as_deref()),
            ("reasoning", self.reasoning.as_deref()),
        ];
        for (name, text) in texts {
            check_length(field(name), name, text.map_or(0, str::len))?;
        }
        for (name, value) in self.headers.iter().flatten() {
            check_length(field(&format!("headers.{name}")), &format!("headers.{name}"), value.len())?;
        }
        if let (Some(text), None, true) = (&self.text, self.chunks, self.kind != K::ToolUse) {
            let words = Pieces::words(text).count();
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
        if let Some(reasoning) = &self.reasoning {
            let words = Pieces::words(reasoning).count();
            if words > MAX_CHUNKS as usize {
                return Err(invalid(
                    field("reasoning"),
                    format!(
                        "`reasoning` has {words} words, streamed one chunk per word: more than the {MAX_CHUNKS} \
                         chunks an answer may have; shorten it"
                    ),
                ));
            }
        }
        self.check_call_sizes(at)
    }

    /// At most [`MAX_TOOL_CALLS`] calls, whose inputs fit in [`MAX_TEXT_BYTES`] each and whose
    /// argument pieces fit in [`MAX_CHUNKS`] in all.
    fn check_call_sizes(&self, at: &str) -> Result<(), Invalid> {
        let Some(calls) = &self.calls else {
            return Ok(());
        };
        if calls.len() > MAX_TOOL_CALLS {
            return Err(invalid(
                format!("{at}.calls"),
                format!("a `{}` step may have at most {MAX_TOOL_CALLS} calls, not {}", self.kind, calls.len()),
            ));
        }
        // A `tool_use` step's `chunks` splits the arguments; a fault's splits its text.
        let (per_call, name) = match self.kind {
            K::ToolUse => (self.chunks, "chunks"),
            _ => (self.argument_chunks, "argument_chunks"),
        };
        let per_call = per_call.unwrap_or(ToolUse::DEFAULT_ARGUMENT_CHUNKS) as usize;
        let mut pieces = 0usize;
        for (i, call) in calls.iter().enumerate() {
            let json = call.input.to_string();
            check_length(format!("{at}.calls[{i}].input"), "input", json.len())?;
            pieces += per_call.min(json.chars().count()).max(1);
        }
        if pieces > MAX_CHUNKS as usize {
            return Err(invalid(
                format!("{at}.{name}"),
                format!(
                    "the calls' arguments would stream in {pieces} chunks in all, more than the {MAX_CHUNKS} \
                     an answer may have; lower `{name}`"
                ),
            ));
        }
        Ok(())
    }

    /// Header names are HTTP tokens, values fit in a header line.
    fn check_headers(&self, at: &str) -> Result<(), Invalid> {
        for (name, value) in self.headers.iter().flatten() {
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
        Ok(())
    }
}
