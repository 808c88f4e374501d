//! The Restate server in a child process on 127.0.0.1, and the requests the tests make to it.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::binary::server_binary;
use super::error::{HarnessError, clip};
use super::ports::{POLL, free_ports};
use super::temp_dir::{TempDir, tail};

/// How long [`RestateServer::start`] waits for the admin API's `/health` to answer 200.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long [`RestateServer::register`] retries a registration (the partitions start after
/// `/health` answers, and the service may still be starting).
pub const REGISTER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long [`RestateServer::attach`] and [`RestateServer::call`] wait for an invocation's end.
pub const ATTACH_TIMEOUT: Duration = Duration::from_secs(120);
/// How long any other request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How many times a start picks new ports when the server exits at once (another process took
/// one of its ports between the pick and the bind).
const START_TRIES: usize = 3;
/// The most an answer's body may hold.
const MAX_BODY: usize = 8 * 1024 * 1024;
/// How many of the log's lines an error carries.
const ERROR_LOG_LINES: usize = 30;
/// The log's file in the data directory.
const LOG: &str = "server.log";

/// The server's environment: one partition (it starts in
/// a fraction of a second), no GitHub check (offline here), no telemetry, plain log lines, and an
/// invocation retry fast enough that a killed service's invocation resumes within a fifth of a
/// second of its restart, and gives up on no outage a test makes.
const ENV: [(&str, &str); 7] = [
    ("DO_NOT_TRACK", "1"),
    ("RESTATE_LOG_FILTER", "warn,restate=info,octocrab=off"),
    ("RESTATE_LOG_DISABLE_ANSI_CODES", "true"),
    ("RESTATE_DEFAULT_NUM_PARTITIONS", "1"),
    ("RESTATE_DEFAULT_RETRY_POLICY__INITIAL_INTERVAL", "50ms"),
    ("RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL", "200ms"),
    ("RESTATE_DEFAULT_RETRY_POLICY__MAX_ATTEMPTS", "10000"),
];

/// A Restate server of this test's own: 127.0.0.1 and three free ports (ingress, admin, node), a
/// temporary data directory, its log in a file there. Dropping it SIGKILLs the server, waits for it
/// and removes the directory.
pub struct RestateServer {
    // Locked to ask whether it still runs (`try_wait` takes `&mut`).
    child: std::sync::Mutex<Child>,
    ingress: SocketAddr,
    admin: SocketAddr,
    client: reqwest::Client,
    // Last: removed after `drop` killed the server.
    dir: TempDir,
}

impl RestateServer {
    /// Starts the server ([`server_binary`]) and waits until its admin API answers `/health`
    /// ([`READY_TIMEOUT`]). Fails, naming what to set, when there is no binary.
    pub async fn start() -> Result<Self, HarnessError> {
        let binary = server_binary()?;
        let mut tries_left = START_TRIES;
        loop {
            tries_left -= 1;
            let server = Self::spawn(&binary)?;
            match server.wait_ready().await {
                Ok(()) => return Ok(server),
                // Most likely a port was taken: new ports, a new directory.
                Err(HarnessError::Exited { .. }) if tries_left > 0 => continue,
                Err(error) => return Err(error),
            }
        }
    }

    fn spawn(binary: &Path) -> Result<Self, HarnessError> {
        let dir = TempDir::new("server")?;
        let log = dir.path().join(LOG);
        let io_error = |doing: String| move |source| HarnessError::Io { doing, source };
        let stdout = std::fs::File::create(&log).map_err(io_error(format!("creating {}", log.display())))?;
        let stderr = stdout.try_clone().map_err(io_error(format!("opening {}", log.display())))?;
        let ports = free_ports(3)?;
        let [ingress, admin, node] =
            [ports[0], ports[1], ports[2]].map(|port| SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
        let mut command = Command::new(binary);
        // The test's own environment must not reconfigure the server (a RESTATE_ variable is a
        // setting of its configuration).
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("RESTATE_") {
                command.env_remove(key);
            }
        }
        command
            .envs(ENV)
            .env("RESTATE_INGRESS__BIND_ADDRESS", ingress.to_string())
            .env("RESTATE_ADMIN__BIND_ADDRESS", admin.to_string())
            .env("RESTATE_BIND_ADDRESS", node.to_string())
            .env("RESTATE_ADVERTISED_ADDRESS", format!("http://{node}/"))
            // tcp: no unix sockets in the data directory; a fixed node name keeps the host's out of it.
            .args(["--no-logo", "--listen-mode", "tcp", "--node-name", "n1", "--base-dir"])
            .arg(dir.path().join("data"))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr);
        let child = command.spawn().map_err(io_error(format!("starting {}", binary.display())))?;
        let client = crate::http::client_builder()
            .no_proxy()
            .build()
            .map_err(|source| HarnessError::Http { request: "building the client".to_owned(), source })?;
        Ok(Self { child: std::sync::Mutex::new(child), ingress, admin, client, dir })
    }

    async fn wait_ready(&self) -> Result<(), HarnessError> {
        let url = format!("{}/health", self.admin_url());
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            self.check_running()?;
            let answer = self.client.get(&url).timeout(Duration::from_secs(1)).send().await;
            if answer.is_ok_and(|answer| answer.status().is_success()) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.timeout(format!("the Restate server's GET {url} to answer 200"), READY_TIMEOUT));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// An error if the server has exited.
    fn check_running(&self) -> Result<(), HarnessError> {
        let exited = self.child.lock().unwrap_or_else(std::sync::PoisonError::into_inner).try_wait();
        match exited {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(HarnessError::Exited {
                what: "the Restate server".to_owned(),
                status,
                log_tail: self.log_tail(ERROR_LOG_LINES),
            }),
            Err(source) => Err(HarnessError::Io { doing: "asking whether the Restate server runs".to_owned(), source }),
        }
    }

    fn timeout(&self, waiting_for: String, after: Duration) -> HarnessError {
        HarnessError::Timeout { waiting_for, after, log_tail: self.log_tail(ERROR_LOG_LINES) }
    }

    /// The ingress's base URL, `http://127.0.0.1:PORT`.
    pub fn ingress_url(&self) -> String {
        format!("http://{}", self.ingress)
    }

    /// The admin API's base URL, `http://127.0.0.1:PORT`.
    pub fn admin_url(&self) -> String {
        format!("http://{}", self.admin)
    }

    /// The server's log file (stdout and stderr), in its data directory.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join(LOG)
    }

    /// The last `lines` lines of the server's log, for a failure's message.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log_path(), lines)
    }

    /// Registers the deployment at `uri` (`POST /deployments`), retrying until the server answers
    /// 2xx ([`REGISTER_TIMEOUT`]: the server's partitions and the service may still be starting).
    /// Returns the server's answer (`{"id": "dp_..", "services": [..]}`).
    pub async fn register(&self, uri: &str) -> Result<Value, HarnessError> {
        let url = format!("{}/deployments", self.admin_url());
        let described = format!("POST {url} {{\"uri\": \"{uri}\"}}");
        let body = serde_json::json!({ "uri": uri }).to_string();
        let deadline = Instant::now() + REGISTER_TIMEOUT;
        loop {
            let request = self.client.post(&url).header("content-type", "application/json").body(body.clone());
            let last = match self.exchange(request, &described, REQUEST_TIMEOUT).await {
                Ok(answer) if answer.status.is_success() => return parse_json(&described, &answer.body),
                Ok(answer) => format!("HTTP {}: {}", answer.status.as_u16(), clip(&answer.body, 2048)),
                Err(error) => error.to_string(),
            };
            self.check_running()?;
            if Instant::now() >= deadline {
                return Err(self.timeout(format!("{described} to succeed (the last answer: {last})"), REGISTER_TIMEOUT));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts `service/handler` with `body` and returns at once with the invocation's id
    /// (`POST /{service}/{handler}/send`, `idempotency-key` header: the same key names the same
    /// invocation). `Value::Null` sends no body and no content type, as a handler without input
    /// requires.
    pub async fn send(
        &self,
        service: &str,
        handler: &str,
        idempotency_key: &str,
        body: &Value,
    ) -> Result<String, HarnessError> {
        let url = format!("{}/{service}/{handler}/send", self.ingress_url());
        let described = format!("POST {url} (idempotency-key {idempotency_key})");
        let request = with_body(self.client.post(&url), body).header("idempotency-key", idempotency_key);
        let answer = self.exchange(request, &described, REQUEST_TIMEOUT).await?;
        if !answer.status.is_success() {
            return Err(status_error(described, &answer));
        }
        let json = parse_json(&described, &answer.body)?;
        match json.get("invocationId").and_then(Value::as_str) {
            Some(id) => Ok(id.to_owned()),
            None => Err(HarnessError::Answer {
                request: described,
                problem: "no `invocationId` string".to_owned(),
                body: clip(&answer.body, 2048),
            }),
        }
    }

    /// Waits for the invocation `id` to end ([`ATTACH_TIMEOUT`]) and returns its HTTP status and
    /// body: its output, or its terminal failure (`{"code":..,"message":..}` with that status).
    pub async fn attach(&self, id: &str) -> Result<(u16, String), HarnessError> {
        self.attach_within(id, ATTACH_TIMEOUT).await
    }

    /// [`attach`](Self::attach), waiting at most `timeout`.
    pub async fn attach_within(&self, id: &str, timeout: Duration) -> Result<(u16, String), HarnessError> {
        let id = invocation_id(id)?;
        let url = format!("{}/restate/invocation/{id}/attach", self.ingress_url());
        let described = format!("invocation {id} to end (GET {url})");
        let answer = self.exchange(self.client.get(&url), &described, timeout).await?;
        Ok((answer.status.as_u16(), answer.body))
    }

    /// Calls `service/handler` with `body` and waits for its end ([`ATTACH_TIMEOUT`]): the HTTP
    /// status, the body, and the invocation's id (the `x-restate-id` header, absent when the
    /// ingress refused the call). `Value::Null` sends no body, as for [`send`](Self::send).
    pub async fn call(
        &self,
        service: &str,
        handler: &str,
        body: &Value,
    ) -> Result<(u16, String, Option<String>), HarnessError> {
        let url = format!("{}/{service}/{handler}", self.ingress_url());
        let described = format!("POST {url}");
        let answer = self.exchange(with_body(self.client.post(&url), body), &described, ATTACH_TIMEOUT).await?;
        Ok((answer.status.as_u16(), answer.body, answer.invocation_id))
    }

    /// Runs `sql` on the admin API (`POST /query`) and returns its rows.
    pub async fn query(&self, sql: &str) -> Result<Vec<Map<String, Value>>, HarnessError> {
        let url = format!("{}/query", self.admin_url());
        let described = format!("POST {url} {sql:?}");
        let request = self
            .client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(serde_json::json!({ "query": sql }).to_string());
        let answer = self.exchange(request, &described, REQUEST_TIMEOUT).await?;
        if !answer.status.is_success() {
            return Err(status_error(described, &answer));
        }
        let json = parse_json(&described, &answer.body)?;
        let rows = json
            .get("rows")
            .and_then(Value::as_array)
            .and_then(|rows| rows.iter().map(|row| row.as_object().cloned()).collect::<Option<Vec<_>>>());
        rows.ok_or_else(|| HarnessError::Answer {
            request: described,
            problem: "no `rows` array of objects".to_owned(),
            body: clip(&answer.body, 2048),
        })
    }

    /// The journal of invocation `id`, in order: `index`, `entry_type` (`Command: Run`,
    /// `Notification: Run`, ...), `name` (a run's name) and `entry_lite_json` of each entry.
    pub async fn journal(&self, id: &str) -> Result<Vec<Map<String, Value>>, HarnessError> {
        let id = invocation_id(id)?;
        self.query(&format!(
            "SELECT index, entry_type, name, entry_lite_json FROM sys_journal WHERE id = '{id}' ORDER BY index"
        ))
        .await
    }

    /// The transient failures of invocation `id`'s attempts (`sys_journal_events` rows of type
    /// `TransientError`: `event_type`, `event_json`). Consecutive identical failures are one row;
    /// none means no attempt failed.
    pub async fn transient_errors(&self, id: &str) -> Result<Vec<Map<String, Value>>, HarnessError> {
        let id = invocation_id(id)?;
        self.query(&format!(
            "SELECT event_type, event_json FROM sys_journal_events WHERE id = '{id}' AND event_type = 'TransientError'"
        ))
        .await
    }

    /// The `sys_invocation` row of invocation `id`: `status` (`completed`, `backing-off`, ...),
    /// `completion_result` (`success`, `failure`), `completion_failure` (`[code] message`),
    /// `retry_count`, `last_failure` (these two only while it runs) and `journal_size`.
    pub async fn invocation(&self, id: &str) -> Result<Map<String, Value>, HarnessError> {
        let id = invocation_id(id)?;
        let sql = format!(
            "SELECT id, status, completion_result, completion_failure, retry_count, last_failure, journal_size \
             FROM sys_invocation WHERE id = '{id}'"
        );
        let mut rows = self.query(&sql).await?;
        match rows.len() {
            1 => Ok(rows.remove(0)),
            count => Err(HarnessError::Answer {
                request: sql,
                problem: format!("{count} rows, not 1: is {id} an invocation of this server?"),
                body: format!("{rows:?}"),
            }),
        }
    }

    /// Sends `request` (at most `timeout`) and reads the answer (at most [`MAX_BODY`] bytes).
    async fn exchange(
        &self,
        request: reqwest::RequestBuilder,
        described: &str,
        timeout: Duration,
    ) -> Result<Answer, HarnessError> {
        let http_error = |source: reqwest::Error| {
            if source.is_timeout() {
                self.timeout(described.to_owned(), timeout)
            } else {
                HarnessError::Http { request: described.to_owned(), source }
            }
        };
        let mut response = request.timeout(timeout).send().await.map_err(http_error)?;
        let status = response.status();
        let invocation_id = response.headers().get("x-restate-id").and_then(|id| id.to_str().ok()).map(str::to_owned);
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(http_error)? {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(HarnessError::Answer {
                    request: described.to_owned(),
                    problem: format!("the body is over {MAX_BODY} bytes"),
                    body: clip(&String::from_utf8_lossy(&body), 2048),
                });
            }
            body.extend_from_slice(&chunk);
        }
        let body = String::from_utf8_lossy(&body).into_owned();
        Ok(Answer { status, body, invocation_id })
    }
}

impl Drop for RestateServer {
    fn drop(&mut self) {
        let child = self.child.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        // SIGKILL: the data directory is thrown away, nothing needs a clean stop.
        let _ = child.kill();
        let _ = child.wait();
    }
}

struct Answer {
    status: reqwest::StatusCode,
    body: String,
    invocation_id: Option<String>,
}

fn with_body(request: reqwest::RequestBuilder, body: &Value) -> reqwest::RequestBuilder {
    match body {
        Value::Null => request,
        body => request.header("content-type", "application/json").body(body.to_string()),
    }
}

fn parse_json(described: &str, body: &str) -> Result<Value, HarnessError> {
    serde_json::from_str(body).map_err(|error| HarnessError::Answer {
        request: described.to_owned(),
        problem: format!("not JSON ({error})"),
        body: clip(body, 2048),
    })
}

fn status_error(request: String, answer: &Answer) -> HarnessError {
    HarnessError::Status { request, status: answer.status.as_u16(), body: clip(&answer.body, 2048) }
}

/// `id` if it can be an invocation id (`inv_` and letters and digits), so it can go into a URL
/// and a SQL string as it is.
fn invocation_id(id: &str) -> Result<&str, HarnessError> {
    let plausible = id.starts_with("inv_") && id.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_');
    if plausible {
        Ok(id)
    } else {
        Err(HarnessError::Argument(format!("{id:?} is not an invocation id (`inv_` followed by letters and digits)")))
    }
}
