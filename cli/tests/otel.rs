//! `agentic ask` with OpenTelemetry: the binary against the chaos server, exporting to an OTLP/HTTP
//! receiver on 127.0.0.1 that records every request it gets.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use agentic_chaos::{ChaosServer, Scenario, Step};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{Metric, metric};
use opentelemetry_proto::tonic::trace::v1::{Span, span, status};
use prost::Message as _;

/// A request the receiver got: its path and body.
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// An OTLP/HTTP collector that answers every POST with an empty 200 and keeps the request. It
/// stops when dropped: a flag, and one connection of its own to wake the accepting thread.
struct Receiver {
    addr: SocketAddr,
    received: Received,
    stop: Arc<AtomicBool>,
    accepting: Option<JoinHandle<Vec<JoinHandle<()>>>>,
}

impl Receiver {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (received, stop) = (Received::default(), Arc::new(AtomicBool::new(false)));
        let accepting = {
            let (received, stop) = (received.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut connections = Vec::new();
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let received = received.clone();
                    connections.push(std::thread::spawn(move || serve(stream.unwrap(), &received)));
                }
                connections
            })
        };
        Self { addr, received, stop, accepting: Some(accepting) }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bodies received on `path`, in order.
    fn bodies(&self, path: &str) -> Vec<Vec<u8>> {
        let received = self.received.lock().unwrap();
        received.iter().filter(|(p, _)| p == path).map(|(_, body)| body.clone()).collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(accepting) = self.accepting.take() {
            // The exporter's connections end when the agentic process does, and every read is
            // bounded: joining cannot hang.
            for connection in accepting.join().unwrap_or_default() {
                let _ = connection.join();
            }
        }
    }
}

/// Serves one connection: requests one after another (the exporter keeps it alive) until the
/// client closes it, or sends nothing for 10 s.
fn serve(mut stream: TcpStream, received: &Received) {
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buffer = Vec::new();
    loop {
        let (head, path, length) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut request = httparse::Request::new(&mut headers);
            if let httparse::Status::Complete(head) = request.parse(&buffer).expect("an HTTP request") {
                let length = request
                    .headers
                    .iter()
                    .find(|header| header.name.eq_ignore_ascii_case("content-length"))
                    .map(|header| std::str::from_utf8(header.value).unwrap().parse::<usize>().unwrap())
                    .expect("a Content-Length");
                break (head, request.path.unwrap().to_owned(), length);
            }
            if !read_more(&mut stream, &mut buffer) {
                return;
            }
        };
        while buffer.len() < head + length {
            if !read_more(&mut stream, &mut buffer) {
                return;
            }
        }
        let body = buffer[head..head + length].to_vec();
        buffer.drain(..head + length);
        // Kept before the answer, so that it is here once the exporter has its 200.
        received.lock().unwrap().push((path, body));
        let answer = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
        if stream.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// Reads what is there into `buffer`; false at the end of the connection (or its timeout).
fn read_more(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> bool {
    let mut chunk = [0; 16 * 1024];
    match stream.read(&mut chunk) {
        Ok(0) => false,
        Ok(n) => {
            buffer.extend_from_slice(&chunk[..n]);
            true
        }
        Err(error) if error.kind() == ErrorKind::Interrupted => true,
        Err(_) => false,
    }
}

/// Runs `agentic` with `env` and no provider or OpenTelemetry variables from the environment.
fn agentic(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentic"));
    command.args(args).stdin(Stdio::null());
    for (name, _) in std::env::vars() {
        if name.starts_with("OTEL_") || name.starts_with("OPENAI_") || name.starts_with("ANTHROPIC_") {
            command.env_remove(name);
        }
    }
    command.envs(env.iter().copied()).output().expect("the agentic binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What `agentic ask` exported when a 503 is followed by an answer.
struct Exported {
    services: Vec<String>,
    spans: Vec<Span>,
    metrics: Vec<Metric>,
}

async fn ask_after_a_503() -> Exported {
    let scenario = Scenario::new().then(Step::http_error(503)).otherwise(Step::ok("hello from chaos"));
    let server = ChaosServer::start(scenario).await.unwrap();
    let receiver = Receiver::start();
    let (url, collector) = (server.openai_base_url(), receiver.url());
    let output = tokio::task::spawn_blocking(move || {
        let args = [
            "ask",
            "--base-url",
            &url,
            "--model",
            "gpt-test",
            "--session-base-delay-ms",
            "2",
            "--exec-base-delay-ms",
            "2",
            "say hi",
        ];
        agentic(&args, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &collector), ("OTEL_SERVICE_NAME", "agentic-test")])
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).trim(), "hello from chaos");
    assert_eq!(text(&output.stderr), "", "no warning: the export succeeded");
    // The CLI flushed before exiting, and the receiver kept each request before answering it:
    // everything is here already.
    let (mut services, mut spans, mut metrics) = (Vec::new(), Vec::new(), Vec::new());
    for body in receiver.bodies("/v1/traces") {
        for resource_spans in ExportTraceServiceRequest::decode(body.as_slice()).unwrap().resource_spans {
            services.extend(resource_spans.resource.as_ref().and_then(|r| string(&r.attributes, "service.name")));
            spans.extend(resource_spans.scope_spans.into_iter().flat_map(|scope| scope.spans));
        }
    }
    for body in receiver.bodies("/v1/metrics") {
        for resource_metrics in ExportMetricsServiceRequest::decode(body.as_slice()).unwrap().resource_metrics {
            services.extend(resource_metrics.resource.as_ref().and_then(|r| string(&r.attributes, "service.name")));
            metrics.extend(resource_metrics.scope_metrics.into_iter().flat_map(|scope| scope.metrics));
        }
    }
    spans.sort_by_key(|span| span.start_time_unix_nano);
    Exported { services, spans, metrics }
}

fn value<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?.value.as_ref()
}

fn string(attributes: &[KeyValue], key: &str) -> Option<String> {
    match value(attributes, key)? {
        any_value::Value::StringValue(text) => Some(text.clone()),
        _ => None,
    }
}

fn int(attributes: &[KeyValue], key: &str) -> Option<i64> {
    match value(attributes, key)? {
        any_value::Value::IntValue(n) => Some(*n),
        _ => None,
    }
}

fn status_code(span: &Span) -> status::StatusCode {
    span.status.as_ref().map_or(status::StatusCode::Unset, |status| status.code())
}

/// The exec span and its model-call spans, in the order the calls were made.
fn exec_and_calls(spans: &[Span]) -> (&Span, Vec<&Span>) {
    let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
    let exec =
        spans.iter().find(|span| span.name == "invoke_agent").unwrap_or_else(|| panic!("no invoke_agent in {names:?}"));
    let calls: Vec<&Span> = spans.iter().filter(|span| span.name.starts_with("chat")).collect();
    assert_eq!(calls.len(), 2, "one chat span per model call: {names:?}");
    (exec, calls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_exports_the_exec_span_a_client_span_per_call_and_the_metrics() {
    let exported = ask_after_a_503().await;
    assert!(!exported.services.is_empty());
    assert!(exported.services.iter().all(|service| service == "agentic-test"), "{:?}", exported.services);

    let (exec, calls) = exec_and_calls(&exported.spans);
    assert_eq!(string(&exec.attributes, "gen_ai.operation.name").as_deref(), Some("invoke_agent"));
    assert_eq!(string(&exec.attributes, "gen_ai.provider.name").as_deref(), Some("openai"));
    assert_ne!(status_code(exec), status::StatusCode::Error);
    for call in &calls {
        assert_eq!(call.kind(), span::SpanKind::Client, "{}", call.name);
        assert_eq!((&call.trace_id, &call.parent_span_id), (&exec.trace_id, &exec.span_id), "a child of the exec span");
        assert_eq!(string(&call.attributes, "gen_ai.operation.name").as_deref(), Some("chat"));
        assert_eq!(string(&call.attributes, "gen_ai.provider.name").as_deref(), Some("openai"));
    }
    let (failed, answered) = (calls[0], calls[1]);
    assert_eq!(status_code(failed), status::StatusCode::Error);
    assert!(string(&failed.attributes, "error.type").is_some_and(|kind| !kind.is_empty()), "{:?}", failed.attributes);
    // The first layer's decision to retry is an event of the failed call's span.
    let verdicts: Vec<_> =
        failed.events.iter().filter_map(|event| string(&event.attributes, "agentic.verdict")).collect();
    assert_eq!(verdicts, ["retry"]);
    // A success leaves the status unset, as the conventions ask: only failures set one.
    assert_ne!(status_code(answered), status::StatusCode::Error);
    assert_eq!(string(&answered.attributes, "error.type"), None);
    assert_eq!(string(&answered.attributes, "gen_ai.response.finish_reasons").as_deref(), Some("stop"));

    let metrics: HashMap<&str, &Metric> =
        exported.metrics.iter().map(|metric| (metric.name.as_str(), metric)).collect();
    let duration = metrics.get("gen_ai.client.operation.duration").unwrap_or_else(|| panic!("{:?}", metrics.keys()));
    assert_eq!(duration.unit, "s");
    let Some(metric::Data::Histogram(histogram)) = &duration.data else { panic!("{duration:?}") };
    assert_eq!(histogram.data_points.iter().map(|point| point.count).sum::<u64>(), 2, "one per call");
    assert_eq!(histogram.data_points[0].explicit_bounds.first(), Some(&0.01));
    assert!(metrics.contains_key("agentic.retry.decisions"), "{:?}", metrics.keys());
}

/// What the provider tells the spans about itself and the tokens the server reported. Needs
/// `OpenAiProvider::model` / `server` (the `Provider` methods), the request asking for
/// `stream_options.include_usage` (the chaos server then reports usage), and the core recording
/// integers as `i64`: `tracing-opentelemetry` exports a `u64` field as a string.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_spans_name_the_model_and_server_and_carry_the_token_usage() {
    let exported = ask_after_a_503().await;
    let (exec, calls) = exec_and_calls(&exported.spans);
    for call in &calls {
        assert_eq!(call.name, "chat gpt-test");
        assert_eq!(string(&call.attributes, "gen_ai.request.model").as_deref(), Some("gpt-test"));
        assert_eq!(string(&call.attributes, "server.address").as_deref(), Some("127.0.0.1"));
        assert!(int(&call.attributes, "server.port").is_some_and(|port| port > 0), "{:?}", call.attributes);
    }
    for span in [calls[1], exec] {
        for key in ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"] {
            assert!(
                int(&span.attributes, key).is_some_and(|tokens| tokens > 0),
                "{key} on {}: {:?}",
                span.name,
                span.attributes
            );
        }
    }
    assert!(
        exported.metrics.iter().any(|metric| metric.name == "gen_ai.client.token.usage" && metric.unit == "{token}")
    );
}

#[test]
fn a_protocol_other_than_http_protobuf_is_a_usage_error_that_says_what_to_set() {
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")];
    let output = agentic(&["ask", "--base-url", "http://127.0.0.1:9/v1", "say hi"], &env);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(stderr.starts_with("error: OpenTelemetry: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported"), "{stderr}");
    assert!(stderr.contains("set it to http/protobuf"), "{stderr}");
}
