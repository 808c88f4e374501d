//! The providers the environment configures, and their bounded flush and shutdown.

use std::time::Duration;

use opentelemetry_otlp::{ExporterBuildError, MetricExporter, Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

use crate::config::Config;
use crate::error::OtelError;
use crate::layers::{not_a_metric, trace_layer};
use crate::metrics::MetricsLayer;

/// How long [`OtelGuard::shutdown`] (and its `Drop`) waits for the last spans and metrics to be
/// exported: 5 s, for both providers together (they shut down side by side).
///
/// The last batch is exported at shutdown (spans are batched for up to 5 s, metrics read every
/// 60 s), so the wait is what makes a short program's telemetry arrive at all; 5 s is ample for
/// a collector that answers, and what the SDK's own meter provider allows itself. The bound is
/// there because a collector that does not answer must not keep a program from exiting: after
/// it, whatever was not exported is dropped and [`OtelError::Shutdown`] says so.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// The tracer and meter providers exporting over OTLP/HTTP, as the environment configures
/// them; flushes and shuts them down when dropped.
///
/// Keep it alive until the program ends (e.g. a `let _otel = ..` in `main`): spans and metrics
/// are batched, and the last batch is sent when the guard goes. Dropping it waits at most
/// [`SHUTDOWN_TIMEOUT`]; [`shutdown`](Self::shutdown) does the same and returns what failed.
#[derive(Debug)]
pub struct OtelGuard {
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
}

impl OtelGuard {
    /// The providers the `OTEL_*` environment variables describe, without installing any
    /// subscriber: for a program with a `tracing` subscriber of its own, which adds
    /// [`layer`](Self::layer) to it. `Ok(None)` when no OTLP endpoint is set; see
    /// [`init_from_env`](crate::init_from_env) for the variables.
    pub fn from_env() -> Result<Option<Self>, OtelError> {
        let Some(config) = Config::from_env(&|name| std::env::var(name).ok())? else {
            return Ok(None);
        };
        Self::start(&config).map(Some)
    }

    fn start(config: &Config) -> Result<Self, OtelError> {
        let mut resource = Resource::builder();
        if let Some(name) = &config.default_service_name {
            resource = resource.with_service_name(name.clone());
        }
        let resource = resource.build();
        let tracer_provider = match &config.traces {
            Some(url) => {
                let exporter =
                    http(SpanExporter::builder().with_http(), url).build().map_err(exporter_error("traces"))?;
                Some(SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource.clone()).build())
            }
            None => None,
        };
        let meter_provider = match &config.metrics {
            Some(url) => {
                let exporter =
                    http(MetricExporter::builder().with_http(), url).build().map_err(exporter_error("metrics"))?;
                Some(SdkMeterProvider::builder().with_periodic_exporter(exporter).with_resource(resource).build())
            }
            None => None,
        };
        Ok(Self { tracer_provider, meter_provider })
    }

    /// The tracer provider, when traces are exported.
    pub fn tracer_provider(&self) -> Option<&SdkTracerProvider> {
        self.tracer_provider.as_ref()
    }

    /// The meter provider, when metrics are exported.
    pub fn meter_provider(&self) -> Option<&SdkMeterProvider> {
        self.meter_provider.as_ref()
    }

    /// The layer exporting through these providers: spans and their events (the metric events
    /// excepted) through `tracing-opentelemetry`, metric events through [`MetricsLayer`]; either
    /// part is left out when its signal is not exported. Add a filter in front of it to leave out
    /// other crates' spans.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'span> LookupSpan<'span>,
    {
        let traces = self.tracer_provider.as_ref().map(|provider| trace_layer(provider).with_filter(not_a_metric()));
        Layer::and_then(traces, self.meter_provider.as_ref().map(MetricsLayer::new))
    }

    /// Exports what is left and shuts both providers down, waiting at most
    /// [`SHUTDOWN_TIMEOUT`]. Returns what failed (a collector that refused or did not answer).
    pub fn shutdown(mut self) -> Result<(), OtelError> {
        self.shutdown_providers()
    }

    fn shutdown_providers(&mut self) -> Result<(), OtelError> {
        let tracer_provider = self.tracer_provider.take();
        let meter_provider = self.meter_provider.take();
        // Side by side, so that the bound holds for both together: each waits on its own
        // exporter thread. (The meter provider bounds its own wait, at 5 s.)
        let (traces, metrics) = std::thread::scope(|scope| {
            let traces =
                scope.spawn(|| tracer_provider.map(|provider| provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT)));
            let metrics = meter_provider.map(|provider| provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT));
            (traces.join().unwrap_or(None), metrics)
        });
        let failures: Vec<String> = [("traces", traces), ("metrics", metrics)]
            .into_iter()
            .filter_map(|(signal, result)| Some(format!("{signal}: {}", result?.err()?)))
            .collect();
        if failures.is_empty() { Ok(()) } else { Err(OtelError::Shutdown(failures.join("; "))) }
    }
}

impl Drop for OtelGuard {
    /// Shuts down as [`shutdown`](Self::shutdown) does; a failure goes to `tracing::warn!` (call
    /// `shutdown` to handle it yourself).
    fn drop(&mut self) {
        if let Err(error) = self.shutdown_providers() {
            tracing::warn!(%error, "spans or metrics were not exported");
        }
    }
}

/// An exporter builder set to post protobuf to `url` (the whole URL: the signal's path included).
fn http<B: WithExportConfig>(builder: B, url: &str) -> B {
    builder.with_protocol(Protocol::HttpBinary).with_endpoint(url)
}

fn exporter_error(signal: &'static str) -> impl Fn(ExporterBuildError) -> OtelError {
    move |error| OtelError::Exporter { signal, message: error.to_string() }
}
