//! A Restate service in a child process on a fixed port, so a test can SIGKILL it and start it
//! again where the server's deployment expects it.

use std::ffi::OsString;
use std::io::BufRead as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::error::HarnessError;
use super::ports::{POLL, accepts, free_ports};
use super::temp_dir::{TempDir, tail};

/// The environment variable that tells the child its address, `127.0.0.1:PORT`: it must serve
/// there (the same on every restart: the deployment's URI).
pub const SERVICE_ADDR_ENV: &str = "AGENTIC_RESTATE_SERVICE_ADDR";
/// How long [`ServiceProcess::spawn`] and [`ServiceProcess::restart`] wait for the child to accept
/// connections.
pub const LISTEN_TIMEOUT: Duration = Duration::from_secs(30);

/// How many times a first spawn picks a new port when the child exits before listening (another
/// process took the port between the pick and the bind).
const SPAWN_TRIES: usize = 3;
/// The stdout lines read and not yet taken by the test; past it, the reader (and then the child,
/// on a full pipe) waits.
const LINES_BUFFERED: usize = 4096;
/// How many of the child's stderr lines an error carries.
const ERROR_LOG_LINES: usize = 30;

/// A service in a child process on `127.0.0.1:PORT`, killed (SIGKILL) and waited for on drop.
///
/// The child's stdout is read line by line ([`next_line`](Self::next_line),
/// [`wait_for_line`](Self::wait_for_line)): the lines of every process it ran, in order, across
/// restarts. Its stderr goes to a file ([`stderr_tail`](Self::stderr_tail)), appended to across
/// restarts, removed on drop.
pub struct ServiceProcess {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, Option<OsString>)>,
    current_dir: Option<PathBuf>,
    addr: SocketAddr,
    child: Option<Child>,
    lines_in: mpsc::Sender<String>,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    // Last: removed after `drop` killed the child.
    dir: TempDir,
}

impl ServiceProcess {
    /// Runs `command` (its program, arguments, environment and directory; not its stdio) with
    /// [`SERVICE_ADDR_ENV`] set to a free port's address, and waits until that port accepts
    /// connections ([`LISTEN_TIMEOUT`]).
    pub async fn spawn(command: Command) -> Result<Self, HarnessError> {
        let dir = TempDir::new("service")?;
        let (lines_in, lines) = mpsc::channel(LINES_BUFFERED);
        let mut service = Self {
            program: command.get_program().to_owned(),
            args: command.get_args().map(ToOwned::to_owned).collect(),
            envs: command.get_envs().map(|(key, value)| (key.to_owned(), value.map(ToOwned::to_owned))).collect(),
            current_dir: command.get_current_dir().map(ToOwned::to_owned),
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            child: None,
            lines_in,
            lines,
            seen: Vec::new(),
            dir,
        };
        let mut tries_left = SPAWN_TRIES;
        loop {
            tries_left -= 1;
            service.addr = SocketAddr::from((Ipv4Addr::LOCALHOST, free_ports(1)?[0]));
            match service.start().await {
                Ok(()) => return Ok(service),
                Err(HarnessError::Exited { .. }) if tries_left > 0 => continue,
                Err(error) => return Err(error),
            }
        }
    }

    /// SIGKILLs the child and waits for it to be gone. Nothing happens if it is not running.
    pub fn kill(&mut self) -> Result<(), HarnessError> {
        let Some(mut child) = self.child.take() else { return Ok(()) };
        // An error here means it already exited; the wait reaps it either way.
        let _ = child.kill();
        child
            .wait()
            .map(drop)
            .map_err(|source| HarnessError::Io { doing: "waiting for the killed service".to_owned(), source })
    }

    /// Kills the child if it runs, then runs the same command on the same address and waits until
    /// it accepts connections ([`LISTEN_TIMEOUT`]).
    pub async fn restart(&mut self) -> Result<(), HarnessError> {
        self.kill()?;
        self.start().await
    }

    /// `http://127.0.0.1:PORT`, the deployment's URI.
    pub fn uri(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address the child serves on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The running child's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The next line the child printed (of any process this ran), waiting at most `timeout`.
    pub async fn next_line(&mut self, timeout: Duration) -> Result<String, HarnessError> {
        match tokio::time::timeout(timeout, self.lines.recv()).await {
            Ok(Some(line)) => {
                self.seen.push(line.clone());
                Ok(line)
            }
            // `self` keeps a sender: the channel does not close.
            Ok(None) | Err(_) => {
                let running = self.running();
                Err(HarnessError::Timeout {
                    waiting_for: format!("a line on the stdout of the service at {} ({running})", self.addr),
                    after: timeout,
                    log_tail: self.stderr_tail(ERROR_LOG_LINES),
                })
            }
        }
    }

    /// Reads lines until one contains `needle` and returns it, waiting at most `timeout` in all.
    pub async fn wait_for_line(&mut self, needle: &str, timeout: Duration) -> Result<String, HarnessError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_line(left).await {
                Ok(line) if line.contains(needle) => return Ok(line),
                Ok(_) => {}
                Err(HarnessError::Timeout { log_tail, .. }) => {
                    let running = self.running();
                    return Err(HarnessError::Timeout {
                        waiting_for: format!(
                            "a line containing {needle:?} on the stdout of the service at {} ({running}); the lines so far: {:?}",
                            self.addr, self.seen
                        ),
                        after: timeout,
                        log_tail,
                    });
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Every line [`next_line`](Self::next_line) and [`wait_for_line`](Self::wait_for_line) have
    /// read so far, in order.
    pub fn lines(&self) -> &[String] {
        &self.seen
    }

    /// The file the child's stderr goes to (every process this ran, appended), removed on drop.
    pub fn stderr_path(&self) -> PathBuf {
        self.dir.path().join("stderr.log")
    }

    /// The last `lines` lines the child (every process this ran) wrote to stderr.
    pub fn stderr_tail(&self, lines: usize) -> String {
        tail(&self.stderr_path(), lines)
    }

    async fn start(&mut self) -> Result<(), HarnessError> {
        let io_error = |doing: String| move |source| HarnessError::Io { doing, source };
        let stderr_path = self.stderr_path();
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&stderr_path)
            .map_err(io_error(format!("opening {}", stderr_path.display())))?;
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        for (key, value) in &self.envs {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        if let Some(dir) = &self.current_dir {
            command.current_dir(dir);
        }
        command.env(SERVICE_ADDR_ENV, self.addr.to_string()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(stderr);
        let mut child = command.spawn().map_err(io_error(format!("starting {:?}", self.program)))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let lines_in = self.lines_in.clone();
        // A thread per process: it ends at the pipe's end, when the process is gone.
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if lines_in.blocking_send(line).is_err() {
                    break;
                }
            }
        });
        self.child = Some(child);
        self.wait_listening().await
    }

    async fn wait_listening(&mut self) -> Result<(), HarnessError> {
        let deadline = Instant::now() + LISTEN_TIMEOUT;
        loop {
            let child = self.child.as_mut().expect("a child was started");
            let exited = child
                .try_wait()
                .map_err(|source| HarnessError::Io { doing: "asking whether the service runs".to_owned(), source })?;
            if let Some(status) = exited {
                self.child = None;
                return Err(HarnessError::Exited {
                    what: format!("the service {:?} (to serve on {})", self.program, self.addr),
                    status,
                    log_tail: self.stderr_tail(ERROR_LOG_LINES),
                });
            }
            if accepts(self.addr).await {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(HarnessError::Timeout {
                    waiting_for: format!("the service {:?} to accept connections on {}", self.program, self.addr),
                    after: LISTEN_TIMEOUT,
                    log_tail: self.stderr_tail(ERROR_LOG_LINES),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Whether a process runs, for an error's message.
    fn running(&mut self) -> String {
        let Some(child) = self.child.as_mut() else { return "no process runs: killed".to_owned() };
        match child.try_wait() {
            Ok(None) => format!("process {} runs", child.id()),
            Ok(Some(status)) => format!("process {} exited ({status})", child.id()),
            Err(error) => format!("process {}: {error}", child.id()),
        }
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}
