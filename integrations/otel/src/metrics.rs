//! The metrics layer: the core's metric events (target `agentic::metrics`) recorded into
//! OpenTelemetry instruments.
//!
//! The core never talks to OpenTelemetry: it emits one `tracing` event per measurement, with the
//! instrument's name in `metric`, the measurement in `value` and the attributes as the other
//! fields (the names: [`agentic_runtime::observe::semconv`]). This layer creates each instrument
//! once, with the kind, unit and bucket boundaries the GenAI semantic conventions give it, and
//! records every such event into it. Events for other targets, and unknown metric names, are
//! ignored. Which names the instruments have is the [`Semconv`] edition's: today's, or the latest
//! experimental ones.

use std::fmt;
use std::time::Instant;

use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider, UpDownCounter};
use opentelemetry::{Key, KeyValue, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use agentic_runtime::observe::semconv::{
    BREAKER_OPEN, BREAKER_TRANSITIONS, COOLDOWNS, EXECUTE_TOOL, EXECUTE_TOOL_DURATION, INFERENCE_DURATION,
    INFERENCE_USAGE, INVOKE_AGENT, INVOKE_AGENT_DURATION, METRICS_TARGET, OPERATION_DURATION, PACER_ADMITTED,
    PACER_WAIT, RETRY_DECISIONS, RETRY_REFUSED, Semconv, TIME_TO_FIRST_CHUNK, TOKEN_TYPES, TOKEN_USAGE,
};

use crate::scope::scope;

/// The spans whose durations [`INVOKE_AGENT_DURATION`] and [`EXECUTE_TOOL_DURATION`] measure.
const TIMED_SPANS: [&str; 2] = [INVOKE_AGENT, EXECUTE_TOOL];
/// The span attributes those durations keep: the low-cardinality ones (no call id, no usage).
const TIMED_ATTRIBUTES: [&str; 6] = [
    "gen_ai.operation.name",
    "gen_ai.agent.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.tool.name",
    "error.type",
];

/// The bucket boundaries the GenAI semantic conventions give `gen_ai.client.operation.duration`
/// (and the latest ones `gen_ai.client.inference.time_to_first_chunk`): 10 ms doubling up to 82 s.
const DURATION_BOUNDARIES: [f64; 14] =
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/// The bucket boundaries the GenAI semantic conventions give `gen_ai.client.token.usage`: powers
/// of 4 from 1 to 67 M.
const TOKEN_BOUNDARIES: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0,
    67108864.0,
];

/// A [`Layer`] that records the core's metric events (target [`METRICS_TARGET`]) into
/// OpenTelemetry instruments of the meter provider it was built with:
///
/// | metric | instrument | unit |
/// |---|---|---|
/// | `gen_ai.client.operation.duration` | histogram (f64), GenAI buckets 0.01 s .. 81.92 s | `s` |
/// | `gen_ai.client.token.usage` | histogram (u64), GenAI buckets 1 .. 67108864 | `{token}` |
/// | `agentic.retry.decisions` | counter | `{decision}` |
/// | `agentic.retry.refused` | counter | `{retry}` |
/// | `agentic.cooldowns` | counter | `{cooldown}` |
/// | `agentic.breaker.transitions` | counter | `{transition}` |
/// | `agentic.breaker.open` | up-down counter (i64) | `{breaker}` |
/// | `agentic.pacer.admitted` | counter | `{call}` |
/// | `agentic.pacer.wait` | histogram (f64), the duration's buckets | `s` |
///
/// Every field of the event but `metric`, `value` and `message` becomes an attribute. Events of
/// other targets and unknown metric names are ignored; keep the `agentic::metrics` target enabled
/// at `INFO` in any filter in front of this layer.
///
/// Those are today's names ([`Semconv::Current`]). With
/// `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` ([`MetricsLayer::new`] reads it once;
/// [`MetricsLayer::with_semconv`] takes the choice), the GenAI ones are the latest experimental
/// conventions' instead: [`INFERENCE_DURATION`], the [`INFERENCE_USAGE`] counters, and
/// [`INVOKE_AGENT_DURATION`] and [`EXECUTE_TOOL_DURATION`] (timed from the spans); and
/// [`TIME_TO_FIRST_CHUNK`], which today's names do not have.
///
/// # Examples
///
/// ```
/// use agentic_otel::MetricsLayer;
/// use opentelemetry_sdk::metrics::SdkMeterProvider;
/// use tracing_subscriber::layer::SubscriberExt as _;
///
/// let meter_provider = SdkMeterProvider::builder().build(); // add a reader or exporter
/// let subscriber = tracing_subscriber::registry().with(MetricsLayer::new(&meter_provider));
/// tracing::subscriber::with_default(subscriber, || {
///     tracing::info!(target: "agentic::metrics", metric = "agentic.cooldowns", value = 1u64,
///         gen_ai.provider.name = "openai");
/// });
/// ```
#[derive(Clone)]
pub struct MetricsLayer {
    /// Each model call's duration, named as the edition names it.
    duration: Histogram<f64>,
    /// Today's token histogram ([`Semconv::Current`]).
    tokens: Option<Histogram<u64>>,
    /// The latest conventions' token counters, in the order of [`TOKEN_TYPES`].
    usage: Option<[Counter<u64>; 4]>,
    /// The latest conventions' span durations, in the order of [`TIMED_SPANS`].
    spans: Option<[Histogram<f64>; 2]>,
    /// The latest conventions' time to first chunk.
    first_chunk: Option<Histogram<f64>>,
    decisions: Counter<u64>,
    refused: Counter<u64>,
    cooldowns: Counter<u64>,
    transitions: Counter<u64>,
    open: UpDownCounter<i64>,
    admitted: Counter<u64>,
    paced: Histogram<f64>,
}

impl MetricsLayer {
    /// Creates the instruments, once, on a meter named `agentic-runtime` of `provider`, named as
    /// `OTEL_SEMCONV_STABILITY_OPT_IN` asks ([`Semconv::from_env`]).
    pub fn new(provider: &impl MeterProvider) -> Self {
        Self::with_semconv(provider, Semconv::from_env())
    }

    /// Like [`MetricsLayer::new`], with the instruments named after `semconv` whatever the
    /// environment says.
    pub fn with_semconv(provider: &impl MeterProvider, semconv: Semconv) -> Self {
        Self::on(&provider.meter_with_scope(scope()), semconv)
    }

    fn on(meter: &Meter, semconv: Semconv) -> Self {
        let latest = semconv == Semconv::LatestExperimental;
        let seconds = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(DURATION_BOUNDARIES.to_vec())
                .build()
        };
        let duration = match semconv {
            Semconv::LatestExperimental => seconds(INFERENCE_DURATION, "GenAI inference duration"),
            _ => seconds(OPERATION_DURATION, "GenAI operation duration"),
        };
        Self {
            duration,
            tokens: (!latest).then(|| {
                meter
                    .u64_histogram(TOKEN_USAGE)
                    .with_unit("{token}")
                    .with_description("Measures number of input and output tokens used")
                    .with_boundaries(TOKEN_BOUNDARIES.to_vec())
                    .build()
            }),
            usage: latest.then(|| {
                INFERENCE_USAGE.map(|name| {
                    meter.u64_counter(name).with_unit("{token}").with_description("Tokens of GenAI inferences").build()
                })
            }),
            spans: latest.then(|| {
                [
                    seconds(INVOKE_AGENT_DURATION, "GenAI agent invocation duration"),
                    seconds(EXECUTE_TOOL_DURATION, "GenAI tool execution duration"),
                ]
            }),
            first_chunk: latest
                .then(|| seconds(TIME_TO_FIRST_CHUNK, "Time to the first chunk of a streamed GenAI inference")),
            decisions: meter
                .u64_counter(RETRY_DECISIONS)
                .with_unit("{decision}")
                .with_description("Decisions of the retry layers on failed model calls and attempts")
                .build(),
            refused: meter
                .u64_counter(RETRY_REFUSED)
                .with_unit("{retry}")
                .with_description("Retries refused by a budget: calls, deadline, Retry-After cap, retry quota")
                .build(),
            cooldowns: meter
                .u64_counter(COOLDOWNS)
                .with_unit("{cooldown}")
                .with_description("Provider cooldowns started by an error")
                .build(),
            transitions: meter
                .u64_counter(BREAKER_TRANSITIONS)
                .with_unit("{transition}")
                .with_description("Transitions of the targets' circuit breakers, by new state")
                .build(),
            open: meter
                .i64_up_down_counter(BREAKER_OPEN)
                .with_unit("{breaker}")
                .with_description("Circuit breakers open now")
                .build(),
            admitted: meter
                .u64_counter(PACER_ADMITTED)
                .with_unit("{call}")
                .with_description("Model calls the pacer admitted, at once or after a wait for a rate limit")
                .build(),
            paced: seconds(PACER_WAIT, "Time model calls waited for a rate limit before they were sent"),
        }
    }

    fn record(&self, measurement: Measurement) {
        let Measurement { metric, value, attributes } = measurement;
        let Some(value) = value else { return };
        match metric.as_deref() {
            Some(OPERATION_DURATION) => self.duration.record(value.as_f64(), &attributes),
            Some(TOKEN_USAGE) => self.record_tokens(value.as_u64(), attributes),
            Some(TIME_TO_FIRST_CHUNK) => {
                if let Some(first_chunk) = &self.first_chunk {
                    first_chunk.record(value.as_f64(), &attributes);
                }
            }
            Some(RETRY_DECISIONS) => self.decisions.add(value.as_u64(), &attributes),
            Some(RETRY_REFUSED) => self.refused.add(value.as_u64(), &attributes),
            Some(COOLDOWNS) => self.cooldowns.add(value.as_u64(), &attributes),
            Some(BREAKER_TRANSITIONS) => self.transitions.add(value.as_u64(), &attributes),
            Some(BREAKER_OPEN) => self.open.add(value.as_i64(), &attributes),
            Some(PACER_ADMITTED) => self.admitted.add(value.as_u64(), &attributes),
            Some(PACER_WAIT) => self.paced.record(value.as_f64(), &attributes),
            _ => {}
        }
    }
}

impl MetricsLayer {
    /// A token count by its `gen_ai.token.type`: today's histogram takes `input` and `output` (the
    /// conventions' two types), the latest conventions' counters each type, without that attribute.
    fn record_tokens(&self, tokens: u64, mut attributes: Vec<KeyValue>) {
        let at = attributes.iter().position(|kv| kv.key.as_str() == "gen_ai.token.type");
        let kind = at.and_then(|at| TOKEN_TYPES.iter().position(|kind| attributes[at].value.as_str() == *kind));
        match (&self.tokens, &self.usage, kind, at) {
            (Some(histogram), _, Some(0 | 1), _) => histogram.record(tokens, &attributes),
            (_, Some(counters), Some(kind), Some(at)) => {
                attributes.remove(at);
                counters[kind].add(tokens, &attributes);
            }
            _ => {}
        }
    }
}

/// What [`MetricsLayer`] keeps on a span it times: when it started and the attributes to record.
struct Timed {
    started: Instant,
    histogram: usize,
    attributes: Vec<KeyValue>,
}

impl fmt::Debug for MetricsLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsLayer").finish_non_exhaustive()
    }
}

impl<S: Subscriber + for<'span> LookupSpan<'span>> Layer<S> for MetricsLayer {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() == METRICS_TARGET {
            let mut measurement = Measurement::default();
            event.record(&mut measurement);
            self.record(measurement);
        }
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if self.spans.is_none() {
            return;
        }
        let Some(histogram) = TIMED_SPANS.iter().position(|name| *name == attrs.metadata().name()) else { return };
        let Some(span) = ctx.span(id) else { return };
        let mut measurement = Measurement::default();
        attrs.record(&mut measurement);
        let attributes = timed_attributes(measurement);
        span.extensions_mut().insert(Timed { started: Instant::now(), histogram, attributes });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        let Some(timed) = extensions.get_mut::<Timed>() else { return };
        let mut measurement = Measurement::default();
        values.record(&mut measurement);
        timed.attributes.extend(timed_attributes(measurement));
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let (Some(spans), Some(span)) = (&self.spans, ctx.span(&id)) else { return };
        if let Some(timed) = span.extensions_mut().remove::<Timed>() {
            spans[timed.histogram].record(timed.started.elapsed().as_secs_f64(), &timed.attributes);
        }
    }
}

/// The attributes of a timed span worth a metric's dimension ([`TIMED_ATTRIBUTES`]).
fn timed_attributes(measurement: Measurement) -> Vec<KeyValue> {
    measurement.attributes.into_iter().filter(|kv| TIMED_ATTRIBUTES.contains(&kv.key.as_str())).collect()
}

/// A measurement's value as the event carried it: durations are f64, counts u64, changes of an
/// up-down counter i64.
#[derive(Clone, Copy)]
enum Number {
    Float(f64),
    Unsigned(u64),
    Signed(i64),
}

impl Number {
    fn as_f64(self) -> f64 {
        match self {
            Self::Float(value) => value,
            Self::Unsigned(value) => value as f64,
            Self::Signed(value) => value as f64,
        }
    }

    /// Saturating, as [`Number::as_u64`].
    fn as_i64(self) -> i64 {
        match self {
            Self::Float(value) => value as i64,
            Self::Unsigned(value) => i64::try_from(value).unwrap_or(i64::MAX),
            Self::Signed(value) => value,
        }
    }

    /// Saturating: a negative or fractional count has no meaning, and a histogram must not be
    /// given a wrapped-around one.
    fn as_u64(self) -> u64 {
        match self {
            Self::Float(value) => value as u64,
            Self::Unsigned(value) => value,
            Self::Signed(value) => u64::try_from(value).unwrap_or(0),
        }
    }
}

/// One metric event, read field by field.
#[derive(Default)]
struct Measurement {
    metric: Option<String>,
    value: Option<Number>,
    attributes: Vec<KeyValue>,
}

impl Measurement {
    fn attribute(&mut self, field: &Field, value: Value) {
        if field.name() != "message" {
            self.attributes.push(KeyValue::new(Key::from_static_str(field.name()), value));
        }
    }
}

impl Visit for Measurement {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "metric" => self.metric = Some(value.to_owned()),
            _ => self.attribute(field, Value::from(value.to_owned())),
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        match field.name() {
            "value" => self.value = Some(Number::Float(value)),
            _ => self.attribute(field, Value::F64(value)),
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "value" => self.value = Some(Number::Unsigned(value)),
            _ => self.attribute(field, Value::I64(i64::try_from(value).unwrap_or(i64::MAX))),
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        match field.name() {
            "value" => self.value = Some(Number::Signed(value)),
            _ => self.attribute(field, Value::I64(value)),
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.attribute(field, Value::Bool(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "metric" => self.metric = Some(format!("{value:?}")),
            _ => self.attribute(field, Value::from(format!("{value:?}"))),
        }
    }
}
