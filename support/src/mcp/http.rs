//! The test server over streamable HTTP, in the test's process, on 127.0.0.1 port 0: every request
//! it gets is recorded, and those [`Options::redirect`] names are answered with a redirect.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Empty, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::record::Record;
use super::server::{Options, Redirect, TestServer, malformed};

/// One HTTP request the server got, as it came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenRequest {
    /// `POST`, `GET`, `DELETE`.
    pub method: String,
    /// The path and the query, as sent (`/mcp?token=...`).
    pub target: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The JSON-RPC method of the body (`initialize`, `tools/call`), if it has one.
    pub rpc_method: Option<String>,
}

/// A running test server over HTTP; it stops when dropped.
pub struct HttpServer {
    address: SocketAddr,
    record: Arc<Record>,
    requests: Arc<Mutex<Vec<SeenRequest>>>,
    sessions: Arc<LocalSessionManager>,
    stop: CancellationToken,
    accept: JoinHandle<()>,
}

type Mcp = TowerToHyperService<StreamableHttpService<TestServer, LocalSessionManager>>;

/// What every connection shares.
#[derive(Clone)]
struct Front {
    mcp: Mcp,
    redirect: Option<Redirect>,
    requests: Arc<Mutex<Vec<SeenRequest>>>,
}

/// Starts the test server with `options` on 127.0.0.1 port 0, at the path `/mcp`. Its tool
/// `exit` stops it (every connection is closed, the call never answered).
pub async fn serve_http(options: Options) -> HttpServer {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("the loopback interface takes a listener");
    let address = listener.local_addr().expect("a bound listener has an address");
    let stop = CancellationToken::new();
    let record = Arc::new(Record::new(None));
    let on_exit: Arc<dyn Fn() + Send + Sync> = Arc::new({
        let stop = stop.clone();
        move || stop.cancel()
    });
    let redirect = options.redirect.clone();
    let json = options.json_answers;
    let server = TestServer::new(options, record.clone(), on_exit);
    let sessions = Arc::new(LocalSessionManager::default());
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop.child_token())
        .with_legacy_session_mode(!json)
        .with_json_response(json);
    let service = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
    let requests = Arc::new(Mutex::new(Vec::new()));
    let front = Front { mcp: TowerToHyperService::new(service), redirect, requests: requests.clone() };
    let accept = tokio::spawn(accept_loop(listener, front, stop.clone()));
    HttpServer { address, record, requests, sessions, stop, accept }
}

async fn accept_loop(listener: TcpListener, front: Front, stop: CancellationToken) {
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                Err(_) => continue,
            },
        };
        // Small answers go out at once, not after the peer's delayed ACK (Nagle's 40 ms).
        let _ = stream.set_nodelay(true);
        let front = front.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| front.clone().answer(request));
            let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            // Stopping drops the connection mid-answer: a server that died.
            tokio::select! {
                () = stop.cancelled() => {}
                _ = connection => {}
            }
        });
    }
}

impl Front {
    /// Records `request`, then redirects it or hands it to the MCP service (its answer's malformed
    /// tools patched in, see [`malformed`]).
    async fn answer(self, request: Request<Incoming>) -> Result<Response<BoxBody<Bytes, Infallible>>, Infallible> {
        let (parts, body) = request.into_parts();
        let body = body.collect().await.map(|collected| collected.to_bytes()).unwrap_or_default();
        let rpc_method = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|message| message.get("method").and_then(Value::as_str).map(str::to_owned));
        let seen = SeenRequest {
            method: parts.method.to_string(),
            target: parts.uri.path_and_query().map(ToString::to_string).unwrap_or_default(),
            authorization: parts
                .headers
                .get(hyper::header::AUTHORIZATION)
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned()),
            rpc_method: rpc_method.clone(),
        };
        self.requests.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(seen);
        if let Some(redirect) = &self.redirect {
            if redirect.only.is_none() || redirect.only == rpc_method {
                let response = Response::builder()
                    .status(redirect.status)
                    .header(hyper::header::LOCATION, &redirect.location)
                    .body(Empty::new().boxed())
                    .expect("a valid redirect");
                return Ok(response);
            }
        }
        let request = Request::from_parts(parts, Full::new(body));
        let response = hyper::service::Service::call(&self.mcp, request).await?;
        Ok(response.map(|body| body.map_frame(|frame| frame.map_data(patch)).boxed()))
    }
}

/// One piece of an answer with the malformed tools' marks made what they stand for.
fn patch(data: Bytes) -> Bytes {
    match std::str::from_utf8(&data).map(malformed) {
        Ok(std::borrow::Cow::Owned(patched)) => Bytes::from(patched),
        _ => data,
    }
}

impl HttpServer {
    /// The server's MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// The server's origin, `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.address)
    }

    /// What the server saw.
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// Every HTTP request the server got, in order.
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.requests.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Ends every session, as a server that restarted or timed them out: the next request of a
    /// client with one gets 404. Returns how many there were.
    pub async fn expire_sessions(&self) -> usize {
        let ids: Vec<_> = self.sessions.sessions.read().await.keys().cloned().collect();
        for id in &ids {
            let _ = self.sessions.close_session(id).await;
        }
        ids.len()
    }

    /// How many sessions are open.
    pub async fn session_count(&self) -> usize {
        self.sessions.sessions.read().await.len()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.cancel();
        self.accept.abort();
    }
}
