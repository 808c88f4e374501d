//! The metrics layer against the SDK's in-memory exporters, fed events as the core emits them.

use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing_subscriber::layer::SubscriberExt as _;

use agentic_runtime::observe::semconv::{METRICS_TARGET, Semconv};

use crate::{MetricsLayer, layer};

/// One exported data point, as plain values.
#[derive(Debug, PartialEq)]
struct Point {
    metric: String,
    unit: String,
    /// Sorted by key.
    attributes: Vec<KeyValue>,
    data: Data,
}

#[derive(Debug, PartialEq)]
enum Data {
    Histogram { count: u64, sum: f64, bounds: Vec<f64> },
    Counter(u64),
    UpDown(i64),
}

/// A meter provider whose data points [`points`] reads.
fn meter_provider() -> (SdkMeterProvider, InMemoryMetricExporter) {
    let exporter = InMemoryMetricExporter::default();
    (SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build(), exporter)
}

/// Runs `emit` under a subscriber with only a [`MetricsLayer`] of today's names, and returns the
/// data points.
fn metrics_of(emit: impl FnOnce()) -> Vec<Point> {
    metrics_with(Semconv::Current, emit)
}

/// Like [`metrics_of`], with the instruments named after `semconv`.
fn metrics_with(semconv: Semconv, emit: impl FnOnce()) -> Vec<Point> {
    let (provider, exporter) = meter_provider();
    let layer = MetricsLayer::with_semconv(&provider, semconv);
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), emit);
    points(&provider, &exporter)
}

/// The data points of the last collection, in the order of their metric's creation.
fn points(provider: &SdkMeterProvider, exporter: &InMemoryMetricExporter) -> Vec<Point> {
    provider.force_flush().unwrap();
    let batches = exporter.get_finished_metrics().unwrap();
    let mut points = Vec::new();
    for scope in batches.last().expect("one collection").scope_metrics() {
        assert_eq!(scope.scope().name(), "agentic-runtime");
        for metric in scope.metrics() {
            let point = |attributes: &mut dyn Iterator<Item = &KeyValue>, data| {
                let mut attributes: Vec<KeyValue> = attributes.cloned().collect();
                attributes.sort_by(|a, b| a.key.as_str().cmp(b.key.as_str()));
                Point { metric: metric.name().to_owned(), unit: metric.unit().to_owned(), attributes, data }
            };
            match metric.data() {
                AggregatedMetrics::F64(MetricData::Histogram(histogram)) => {
                    for p in histogram.data_points() {
                        let data = Data::Histogram { count: p.count(), sum: p.sum(), bounds: p.bounds().collect() };
                        points.push(point(&mut p.attributes(), data));
                    }
                }
                AggregatedMetrics::U64(MetricData::Histogram(histogram)) => {
                    for p in histogram.data_points() {
                        let data =
                            Data::Histogram { count: p.count(), sum: p.sum() as f64, bounds: p.bounds().collect() };
                        points.push(point(&mut p.attributes(), data));
                    }
                }
                AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                    assert!(sum.is_monotonic(), "{} is a counter", metric.name());
                    for p in sum.data_points() {
                        points.push(point(&mut p.attributes(), Data::Counter(p.value())));
                    }
                }
                AggregatedMetrics::I64(MetricData::Sum(sum)) => {
                    assert!(!sum.is_monotonic(), "{} is an up-down counter", metric.name());
                    for p in sum.data_points() {
                        points.push(point(&mut p.attributes(), Data::UpDown(p.value())));
                    }
                }
                other => panic!("unexpected data for {}: {other:?}", metric.name()),
            }
        }
    }
    points
}

fn kv(key: &'static str, value: impl Into<Value>) -> KeyValue {
    KeyValue::new(key, value)
}

const TOKEN_BOUNDS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0,
    67108864.0,
];
const DURATION_BOUNDS: [f64; 14] =
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

#[test]
fn token_usage_is_a_histogram_of_tokens_by_type_with_the_genai_buckets() {
    let points = metrics_of(|| {
        for (kind, tokens) in [("input", 12u64), ("output", 5u64)] {
            tracing::info!(target: "agentic::metrics", metric = "gen_ai.client.token.usage", value = tokens,
                gen_ai.operation.name = "chat", gen_ai.provider.name = "openai", gen_ai.request.model = "gpt-4o",
                server.address = "api.openai.com", server.port = 443u64, gen_ai.token.type = kind);
        }
    });
    let expected = |kind: &'static str, sum: f64| Point {
        metric: "gen_ai.client.token.usage".to_owned(),
        unit: "{token}".to_owned(),
        attributes: vec![
            kv("gen_ai.operation.name", "chat"),
            kv("gen_ai.provider.name", "openai"),
            kv("gen_ai.request.model", "gpt-4o"),
            kv("gen_ai.token.type", kind),
            kv("server.address", "api.openai.com"),
            kv("server.port", 443i64),
        ],
        data: Data::Histogram { count: 1, sum, bounds: TOKEN_BOUNDS.to_vec() },
    };
    let mut points = points;
    points.sort_by(|a, b| format!("{:?}", a.attributes).cmp(&format!("{:?}", b.attributes)));
    assert_eq!(points, [expected("input", 12.0), expected("output", 5.0)]);
}

#[test]
fn operation_duration_is_a_histogram_of_seconds_with_the_error_type_of_a_failed_call() {
    let points = metrics_of(|| {
        tracing::info!(target: "agentic::metrics", metric = "gen_ai.client.operation.duration", value = 0.25f64,
            gen_ai.operation.name = "chat", gen_ai.provider.name = "anthropic", error.type = "ServiceUnavailableError");
        tracing::info!(target: "agentic::metrics", metric = "gen_ai.client.operation.duration", value = 1.5f64,
            gen_ai.operation.name = "chat", gen_ai.provider.name = "anthropic", error.type = "ServiceUnavailableError");
    });
    assert_eq!(
        points,
        [Point {
            metric: "gen_ai.client.operation.duration".to_owned(),
            unit: "s".to_owned(),
            attributes: vec![
                kv("error.type", "ServiceUnavailableError"),
                kv("gen_ai.operation.name", "chat"),
                kv("gen_ai.provider.name", "anthropic"),
            ],
            data: Data::Histogram { count: 2, sum: 1.75, bounds: DURATION_BOUNDS.to_vec() },
        }]
    );
}

#[test]
fn the_counters_add_up_by_their_attributes() {
    let points = metrics_of(|| {
        for _ in 0..2 {
            tracing::info!(target: "agentic::metrics", metric = "agentic.retry.decisions", value = 1u64,
                agentic.layer = "session", agentic.verdict = "retry");
        }
        tracing::info!(target: "agentic::metrics", metric = "agentic.retry.refused", value = 1u64,
            agentic.layer = "exec", agentic.refusal = "deadline");
        tracing::info!(target: "agentic::metrics", metric = "agentic.cooldowns", value = 1u64, gen_ai.provider.name = "openai");
    });
    let counter = |metric: &str, unit: &str, attributes: Vec<KeyValue>, value| Point {
        metric: metric.to_owned(),
        unit: unit.to_owned(),
        attributes,
        data: Data::Counter(value),
    };
    assert_eq!(
        points,
        [
            counter(
                "agentic.retry.decisions",
                "{decision}",
                vec![kv("agentic.layer", "session"), kv("agentic.verdict", "retry")],
                2
            ),
            counter(
                "agentic.retry.refused",
                "{retry}",
                vec![kv("agentic.layer", "exec"), kv("agentic.refusal", "deadline")],
                1
            ),
            counter("agentic.cooldowns", "{cooldown}", vec![kv("gen_ai.provider.name", "openai")], 1),
        ]
    );
}

/// The breakers' events as a breaker's life emits them (the runtime's tests check it does: its
/// `storm/metric_events.rs`): opened, half-open, its probe failed, half-open, closed, opened again.
#[test]
fn a_breakers_transitions_are_counted_by_new_state_and_its_openings_add_up() {
    let mut points = metrics_of(|| {
        let changes = [("open", 1i64), ("half_open", 0), ("open", 0), ("half_open", 0), ("closed", -1), ("open", 1)];
        for (state, change) in changes {
            tracing::info!(target: "agentic::metrics", metric = "agentic.breaker.transitions", value = 1u64,
                agentic.target = "openai/gpt-x", agentic.breaker.state = state);
            if change != 0 {
                tracing::info!(target: "agentic::metrics", metric = "agentic.breaker.open", value = change,
                    agentic.target = "openai/gpt-x");
            }
        }
    });
    points.sort_by(|a, b| (&a.metric, format!("{:?}", a.attributes)).cmp(&(&b.metric, format!("{:?}", b.attributes))));
    let point = |metric: &str, unit: &str, state: Option<&'static str>, data| Point {
        metric: metric.to_owned(),
        unit: unit.to_owned(),
        attributes: state
            .map(|state| kv("agentic.breaker.state", state))
            .into_iter()
            .chain([kv("agentic.target", "openai/gpt-x")])
            .collect(),
        data,
    };
    assert_eq!(
        points,
        [
            point("agentic.breaker.open", "{breaker}", None, Data::UpDown(1)),
            point("agentic.breaker.transitions", "{transition}", Some("closed"), Data::Counter(1)),
            point("agentic.breaker.transitions", "{transition}", Some("half_open"), Data::Counter(2)),
            point("agentic.breaker.transitions", "{transition}", Some("open"), Data::Counter(3)),
        ]
    );
}

#[test]
fn the_pacer_counts_the_calls_it_admitted_and_times_the_waits() {
    use agentic_runtime::storm::pace::{Limit, LimitKind, RateLimits};
    use agentic_runtime::{Runtime, Scripted, ScriptedProvider};

    let mut points = metrics_of(|| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        runtime.block_on(async {
            // 1 of 10 left, full in 54 s: a minute's limit; the next two each wait 6 s.
            let limits =
                RateLimits::new().with(LimitKind::Requests, Limit::new(10, 1, std::time::Duration::from_secs(54)));
            let provider =
                ScriptedProvider::new([Scripted::ok("warm").with_rate_limits(limits)]).otherwise(Scripted::ok("hi"));
            let runtime = Runtime::new(provider);
            for _ in 0..4 {
                runtime.exec("hi").await.unwrap();
            }
        });
    });
    points.sort_by(|a, b| (&a.metric, format!("{:?}", a.attributes)).cmp(&(&b.metric, format!("{:?}", b.attributes))));
    let admitted = |paced: &'static str, count| Point {
        metric: "agentic.pacer.admitted".to_owned(),
        unit: "{call}".to_owned(),
        attributes: vec![kv("agentic.paced", paced), kv("gen_ai.provider.name", "scripted")],
        data: Data::Counter(count),
    };
    let paced: Vec<&Point> = points.iter().filter(|point| point.metric.starts_with("agentic.pacer")).collect();
    assert_eq!(paced.len(), 3, "{points:?}");
    assert_eq!(*paced[0], admitted("at_once", 1));
    assert_eq!(*paced[1], admitted("waited", 2));
    assert_eq!(paced[2].metric, "agentic.pacer.wait");
    assert_eq!(paced[2].unit, "s");
    assert!(
        matches!(&paced[2].data, Data::Histogram { count: 2, sum, .. } if (*sum - 12.0).abs() < 1e-3),
        "{:?}",
        paced[2]
    );
}

#[test]
fn unknown_metrics_other_targets_and_events_without_a_value_are_ignored() {
    let points = metrics_of(|| {
        tracing::info!(target: "agentic::metrics", metric = "agentic.unknown", value = 1u64);
        tracing::info!(target: "agentic::metrics", metric = "agentic.cooldowns", gen_ai.provider.name = "openai");
        tracing::info!(metric = "agentic.cooldowns", value = 1u64, "not on the metrics target");
        tracing::info!(target: "agentic::metrics", metric = "agentic.cooldowns", value = 3u64, "a message is no attribute");
    });
    assert_eq!(points.len(), 1, "{points:?}");
    assert_eq!((points[0].attributes.as_slice(), &points[0].data), (&[][..], &Data::Counter(3)));
}

#[test]
fn layer_records_metric_events_as_metrics_and_not_as_span_events() {
    let spans = InMemorySpanExporter::default();
    let tracer_provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
    let (meter_provider, metrics) = meter_provider();
    let subscriber = tracing_subscriber::registry().with(layer(&tracer_provider, &meter_provider));
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("call", otel.name = "chat gpt-4o", otel.kind = "client");
        let _entered = span.enter();
        tracing::info!(target: METRICS_TARGET, metric = "gen_ai.client.operation.duration", value = 0.5f64);
        tracing::info!(agentic.verdict = "retry", "a retry decision");
    });
    tracer_provider.force_flush().unwrap();
    let spans = spans.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 1);
    assert_eq!(
        (spans[0].name.as_ref(), spans[0].span_kind.clone()),
        ("chat gpt-4o", opentelemetry::trace::SpanKind::Client)
    );
    let events: Vec<&str> = spans[0].events.iter().map(|event| event.name.as_ref()).collect();
    assert_eq!(events, ["a retry decision"]);
    let points = points(&meter_provider, &metrics);
    assert_eq!((points.len(), points[0].metric.as_str()), (1, "gen_ai.client.operation.duration"));
}

/// A model call's metric events as the core emits them (`telemetry::call_metrics`), with cache reads.
fn a_call_with_cache_reads() {
    tracing::info!(target: "agentic::metrics", metric = "gen_ai.client.operation.duration", value = 0.5f64,
        gen_ai.operation.name = "chat", gen_ai.provider.name = "gcp.gemini");
    for (kind, tokens) in [("input", 12u64), ("output", 5u64), ("cache_read", 8u64)] {
        tracing::info!(target: "agentic::metrics", metric = "gen_ai.client.token.usage", value = tokens,
            gen_ai.operation.name = "chat", gen_ai.provider.name = "gcp.gemini", gen_ai.token.type = kind);
    }
}

#[test]
fn todays_names_keep_the_token_histogram_to_input_and_output() {
    let names: Vec<(String, u64)> = metrics_of(a_call_with_cache_reads)
        .into_iter()
        .map(|point| {
            let count = match point.data {
                Data::Histogram { count, .. } => count,
                Data::Counter(value) => value,
                Data::UpDown(value) => panic!("no up-down counter here: {value}"),
            };
            (point.metric, count)
        })
        .collect();
    assert_eq!(
        names,
        [
            ("gen_ai.client.operation.duration".to_owned(), 1),
            ("gen_ai.client.token.usage".to_owned(), 1),
            ("gen_ai.client.token.usage".to_owned(), 1),
        ]
    );
}

#[test]
fn the_latest_conventions_name_an_inference_and_count_its_tokens_by_kind() {
    let mut points = metrics_with(Semconv::LatestExperimental, a_call_with_cache_reads);
    points.sort_by(|a, b| a.metric.cmp(&b.metric));
    let attributes = vec![kv("gen_ai.operation.name", "chat"), kv("gen_ai.provider.name", "gcp.gemini")];
    let counter = |metric: &str, value| Point {
        metric: metric.to_owned(),
        unit: "{token}".to_owned(),
        attributes: attributes.clone(),
        data: Data::Counter(value),
    };
    assert_eq!(
        points,
        [
            Point {
                metric: "gen_ai.client.inference.duration".to_owned(),
                unit: "s".to_owned(),
                attributes: attributes.clone(),
                data: Data::Histogram { count: 1, sum: 0.5, bounds: DURATION_BOUNDS.to_vec() },
            },
            counter("gen_ai.client.inference.usage.cache_read.input_tokens", 8),
            counter("gen_ai.client.inference.usage.input_tokens", 12),
            counter("gen_ai.client.inference.usage.output_tokens", 5),
        ]
    );
}

/// An exec's span and a tool call's, as the core opens them, the tool failing.
fn an_exec_with_a_tool_call() {
    let exec = tracing::info_span!(
        "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = "summarize",
        gen_ai.provider.name = "gcp.gemini",
        gen_ai.usage.input_tokens = 12u64
    );
    let _exec = exec.enter();
    let tool = tracing::info_span!("execute_tool", gen_ai.operation.name = "execute_tool", gen_ai.tool.name = "search",
        gen_ai.tool.call.id = "call_1", error.type = tracing::field::Empty);
    tool.record("error.type", "ToolError");
}

#[test]
fn the_latest_conventions_time_each_exec_and_tool_call_from_its_span() {
    let points = metrics_with(Semconv::LatestExperimental, an_exec_with_a_tool_call);
    let timed: Vec<(&str, &[KeyValue])> =
        points.iter().map(|point| (point.metric.as_str(), point.attributes.as_slice())).collect();
    assert_eq!(
        timed,
        [
            (
                "gen_ai.invoke_agent.duration",
                &[
                    kv("gen_ai.agent.name", "summarize"),
                    kv("gen_ai.operation.name", "invoke_agent"),
                    kv("gen_ai.provider.name", "gcp.gemini"),
                ][..]
            ),
            (
                "gen_ai.execute_tool.duration",
                &[
                    kv("error.type", "ToolError"),
                    kv("gen_ai.operation.name", "execute_tool"),
                    kv("gen_ai.tool.name", "search")
                ][..]
            ),
        ]
    );
    assert!(points.iter().all(|point| matches!(point.data, Data::Histogram { count: 1, .. })), "{points:?}");
    // Today's names time no span (a counter beside, so that there is a collection to read).
    let today = metrics_of(|| {
        an_exec_with_a_tool_call();
        tracing::info!(target: "agentic::metrics", metric = "agentic.cooldowns", value = 1u64);
    });
    let names: Vec<&str> = today.iter().map(|point| point.metric.as_str()).collect();
    assert_eq!(names, ["agentic.cooldowns"]);
}

/// A scripted provider that names itself as Gemini's does: the name reaches spans and metrics as is.
struct NamedGemini(agentic_runtime::ScriptedProvider);

impl agentic_runtime::provider::Provider for NamedGemini {
    fn name(&self) -> &str {
        "gcp.gemini"
    }

    fn stream<'a>(
        &'a self,
        request: &'a agentic_runtime::provider::Request<'a>,
    ) -> agentic_runtime::provider::EventStream<'a> {
        self.0.stream(request)
    }
}

#[tokio::test(start_paused = true)]
async fn the_providers_name_is_the_genai_provider_name_on_spans_and_metrics() {
    let spans = InMemorySpanExporter::default();
    let tracer_provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
    let (meter_provider, metrics) = meter_provider();
    let subscriber = tracing_subscriber::registry().with(layer(&tracer_provider, &meter_provider));
    let provider = NamedGemini(agentic_runtime::ScriptedProvider::new([
        agentic_runtime::Scripted::ok("hello").with_usage(agentic_runtime::message::Usage::new(12, 5))
    ]));
    let runtime = agentic_runtime::Runtime::new(provider);
    {
        let _default = tracing::subscriber::set_default(subscriber);
        runtime.exec("hi").await.unwrap();
    }
    tracer_provider.force_flush().unwrap();
    let spans = spans.get_finished_spans().unwrap();
    let named = |span: &opentelemetry_sdk::trace::SpanData| {
        span.attributes.iter().find(|kv| kv.key.as_str() == "gen_ai.provider.name").map(|kv| kv.value.to_string())
    };
    assert!(spans.len() >= 2, "an exec span and a call span: {spans:?}");
    for span in &spans {
        assert_eq!(named(span).as_deref(), Some("gcp.gemini"), "{}", span.name);
    }
    let points = points(&meter_provider, &metrics);
    assert!(!points.is_empty());
    for point in &points {
        assert!(point.attributes.contains(&kv("gen_ai.provider.name", "gcp.gemini")), "{point:?}");
    }
}

/// A provider whose content comes late: the first text after 250 ms, the rest 500 ms later.
struct Paced;

impl agentic_runtime::provider::Provider for Paced {
    fn name(&self) -> &str {
        "gcp.gemini"
    }

    fn stream<'a>(
        &'a self,
        _: &'a agentic_runtime::provider::Request<'a>,
    ) -> agentic_runtime::provider::EventStream<'a> {
        use agentic_runtime::provider::StreamEvent;
        use std::time::Duration;
        let events = [
            (Duration::from_millis(250), StreamEvent::TextDelta("hel".into())),
            (Duration::from_millis(500), StreamEvent::TextDelta("lo".into())),
            (Duration::ZERO, StreamEvent::Done { stop_reason: agentic_runtime::message::StopReason::Stop }),
        ];
        Box::pin(futures_util::stream::unfold(events.into_iter(), |mut events| async move {
            let (after, event) = events.next()?;
            tokio::time::sleep(after).await;
            Some((Ok(event), events))
        }))
    }
}

/// One exec of [`Paced`] under a subscriber exporting spans and metrics named after `semconv`
/// (the spans' attributes follow the environment, which this binary never sets): the finished
/// spans and the data points.
async fn paced_exec(semconv: Semconv) -> (Vec<opentelemetry_sdk::trace::SpanData>, Vec<Point>) {
    use tracing_subscriber::Layer as _;
    let spans = InMemorySpanExporter::default();
    let tracer_provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
    let (meter_provider, metrics) = meter_provider();
    let trace = crate::layers::trace_layer(&tracer_provider).with_filter(crate::layers::not_a_metric());
    let subscriber =
        tracing_subscriber::registry().with(trace).with(MetricsLayer::with_semconv(&meter_provider, semconv));
    let runtime = agentic_runtime::Runtime::new(Paced);
    {
        let _default = tracing::subscriber::set_default(subscriber);
        assert_eq!(runtime.exec("hi").await.unwrap().text(), "hello");
    }
    tracer_provider.force_flush().unwrap();
    (spans.get_finished_spans().unwrap(), points(&meter_provider, &metrics))
}

fn histogram_sum(points: &[Point], metric: &str) -> Option<(u64, f64)> {
    points.iter().find(|point| point.metric == metric).map(|point| match point.data {
        Data::Histogram { count, sum, .. } => (count, sum),
        Data::Counter(value) => panic!("{metric} is a counter of {value}"),
        Data::UpDown(value) => panic!("{metric} is an up-down counter of {value}"),
    })
}

#[tokio::test(start_paused = true)]
async fn the_latest_conventions_time_a_streamed_call_to_its_first_chunk() {
    let (_, points) = paced_exec(Semconv::LatestExperimental).await;
    let first = points.iter().find(|point| point.metric == "gen_ai.client.inference.time_to_first_chunk");
    assert_eq!(
        first,
        Some(&Point {
            metric: "gen_ai.client.inference.time_to_first_chunk".to_owned(),
            unit: "s".to_owned(),
            attributes: vec![kv("gen_ai.operation.name", "chat"), kv("gen_ai.provider.name", "gcp.gemini")],
            data: Data::Histogram { count: 1, sum: 0.25, bounds: DURATION_BOUNDS.to_vec() },
        }),
        "{points:?}"
    );
    // The first chunk, not the whole call: that is the inference's duration.
    assert_eq!(histogram_sum(&points, "gen_ai.client.inference.duration"), Some((1, 0.75)));
}

#[tokio::test(start_paused = true)]
async fn without_the_opt_in_no_first_chunk_and_no_compaction_is_named() {
    let (spans, points) = paced_exec(Semconv::Current).await;
    let names: Vec<&str> = points.iter().map(|point| point.metric.as_str()).collect();
    assert_eq!(names, ["gen_ai.client.operation.duration"], "today's names, exactly");
    assert_eq!(histogram_sum(&points, "gen_ai.client.operation.duration"), Some((1, 0.75)));
    // A compacted exec too: its spans carry today's attributes only.
    let spans_of_compaction = compacted_exec_spans().await;
    for span in spans.iter().chain(&spans_of_compaction) {
        for key in ["gen_ai.response.time_to_first_chunk", "gen_ai.conversation.compacted"] {
            assert!(span.attributes.iter().all(|kv| kv.key.as_str() != key), "{key} on {}", span.name);
        }
    }
    assert_eq!(spans_of_compaction.iter().filter(|span| span.name.starts_with("chat")).count(), 4);
}

/// The spans of an exec that overflows its context after two tool turns and compacts it.
async fn compacted_exec_spans() -> Vec<opentelemetry_sdk::trace::SpanData> {
    use agentic_runtime::{Scripted, Toolbox};
    let spans = InMemorySpanExporter::default();
    let tracer_provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
    let meter_provider = SdkMeterProvider::builder().build();
    let subscriber = tracing_subscriber::registry().with(layer(&tracer_provider, &meter_provider));
    let tools = Toolbox::new().with_fn("read", "Reads a page", serde_json::json!({"type": "object"}), |_| async {
        Ok("a long page".to_owned())
    });
    let provider = agentic_runtime::ScriptedProvider::new([
        Scripted::tool_call("read", serde_json::json!({})),
        Scripted::tool_call("read", serde_json::json!({})),
        Scripted::http(400, "This model's maximum context length is 8192 tokens"),
        Scripted::ok("The pages say ...").with_latency(std::time::Duration::from_millis(250)),
    ]);
    let runtime = agentic_runtime::Runtime::builder(provider)
        .with_tools(tools)
        .with_compactor(agentic_runtime::compact::DropOldest::keeping(1))
        .build()
        .unwrap();
    {
        let _default = tracing::subscriber::set_default(subscriber);
        runtime.exec("Read the pages.").await.unwrap();
    }
    tracer_provider.force_flush().unwrap();
    spans.get_finished_spans().unwrap()
}
