//! The metrics layer: the core's metric events (target `agentic::metrics`) recorded into
//! OpenTelemetry instruments.
//!
//! The core never talks to OpenTelemetry: it emits one `tracing` event per measurement, with the
//! instrument's name in `metric`, the measurement in `value` and the attributes as the other
//! fields (docs/design.md, issue 13). This layer creates each instrument once, with the kind,
//! unit and bucket boundaries the GenAI semantic conventions give it, and records every such
//! event into it. Events for other targets, and unknown metric names, are ignored.

use std::fmt;

use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider};
use opentelemetry::{Key, KeyValue, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use super::layers::scope;

/// The `tracing` target of the core's metric events.
pub const METRICS_TARGET: &str = crate::telemetry::METRICS;

/// The duration of each model call, in seconds (a histogram).
pub const OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
/// The input and output tokens of each model call (a histogram, `gen_ai.token.type` = `input` or
/// `output`).
pub const TOKEN_USAGE: &str = "gen_ai.client.token.usage";
/// The decisions of either retry layer (a counter, by `agentic.layer` and `agentic.verdict`).
pub const RETRY_DECISIONS: &str = "agentic.retry.decisions";
/// The retries a budget refused (a counter, by `agentic.layer` and `agentic.refusal`).
pub const RETRY_REFUSED: &str = "agentic.retry.refused";
/// The cooldowns a provider's error started (a counter, by `gen_ai.provider.name`).
pub const COOLDOWNS: &str = "agentic.cooldowns";

/// The bucket boundaries the GenAI semantic conventions give `gen_ai.client.operation.duration`:
/// 10 ms doubling up to 82 s.
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
///
/// Every field of the event but `metric`, `value` and `message` becomes an attribute. Events of
/// other targets and unknown metric names are ignored; keep the `agentic::metrics` target enabled
/// at `INFO` in any filter in front of this layer.
///
/// # Examples
///
/// ```
/// use agentic_runtime::otel::MetricsLayer;
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
    duration: Histogram<f64>,
    tokens: Histogram<u64>,
    decisions: Counter<u64>,
    refused: Counter<u64>,
    cooldowns: Counter<u64>,
}

impl MetricsLayer {
    /// Creates the instruments, once, on a meter named `agentic-runtime` of `provider`.
    pub fn new(provider: &impl MeterProvider) -> Self {
        Self::on(&provider.meter_with_scope(scope()))
    }

    fn on(meter: &Meter) -> Self {
        Self {
            duration: meter
                .f64_histogram(OPERATION_DURATION)
                .with_unit("s")
                .with_description("GenAI operation duration")
                .with_boundaries(DURATION_BOUNDARIES.to_vec())
                .build(),
            tokens: meter
                .u64_histogram(TOKEN_USAGE)
                .with_unit("{token}")
                .with_description("Measures number of input and output tokens used")
                .with_boundaries(TOKEN_BOUNDARIES.to_vec())
                .build(),
            decisions: meter
                .u64_counter(RETRY_DECISIONS)
                .with_unit("{decision}")
                .with_description("Decisions of the retry layers on failed model calls and attempts")
                .build(),
            refused: meter
                .u64_counter(RETRY_REFUSED)
                .with_unit("{retry}")
                .with_description("Retries refused by a budget: calls, deadline, Retry-After cap, retry budget")
                .build(),
            cooldowns: meter
                .u64_counter(COOLDOWNS)
                .with_unit("{cooldown}")
                .with_description("Provider cooldowns started by an error")
                .build(),
        }
    }

    fn record(&self, measurement: Measurement) {
        let Measurement { metric, value, attributes } = measurement;
        let Some(value) = value else { return };
        match metric.as_deref() {
            Some(OPERATION_DURATION) => self.duration.record(value.as_f64(), &attributes),
            Some(TOKEN_USAGE) => self.tokens.record(value.as_u64(), &attributes),
            Some(RETRY_DECISIONS) => self.decisions.add(value.as_u64(), &attributes),
            Some(RETRY_REFUSED) => self.refused.add(value.as_u64(), &attributes),
            Some(COOLDOWNS) => self.cooldowns.add(value.as_u64(), &attributes),
            _ => {}
        }
    }
}

impl fmt::Debug for MetricsLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsLayer").finish_non_exhaustive()
    }
}

impl<S: Subscriber> Layer<S> for MetricsLayer {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() == METRICS_TARGET {
            let mut measurement = Measurement::default();
            event.record(&mut measurement);
            self.record(measurement);
        }
    }
}

/// A measurement's value as the event carried it: durations are f64, counts u64.
#[derive(Clone, Copy)]
enum Number {
    Float(f64),
    Unsigned(u64),
}

impl Number {
    fn as_f64(self) -> f64 {
        match self {
            Self::Float(value) => value,
            Self::Unsigned(value) => value as f64,
        }
    }

    /// Saturating: a negative or fractional count has no meaning, and a histogram must not be
    /// given a wrapped-around one.
    fn as_u64(self) -> u64 {
        match self {
            Self::Float(value) => value as u64,
            Self::Unsigned(value) => value,
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
            "value" => self.value = Some(Number::Unsigned(u64::try_from(value).unwrap_or(0))),
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
