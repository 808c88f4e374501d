//! A Restate server and services for the tests of `agentic-restate`, each in a process of its own
//! so a test can SIGKILL it.
//!
//! - [`RestateServer`]: the server on 127.0.0.1 and three free ports, with a temporary data
//!   directory and a fast invocation retry, killed and removed on drop; its ingress (send, attach,
//!   call) and admin API (register a deployment, SQL over the journal) as typed requests.
//! - [`ServiceProcess`]: a service (a command, e.g. the test binary re-executed) on a fixed free
//!   port, told through [`SERVICE_ADDR_ENV`]; killed with SIGKILL and restarted on the same address
//!   (the deployment's URI stays the same); its stdout read line by line.
//!
//! The server's binary is `RESTATE_SERVER_BIN`, else `restate-server` on `PATH` (the npm package's
//! Node wrapper resolved to the platform binary it runs): `.ci/restate.sh` installs it. Without
//! one, [`RestateServer::start`] fails with an error saying how to get one: the tests fail, they do
//! not skip. Every wait is bounded; each bound is a constant below or an argument.

mod binary;
mod error;
mod ports;
mod server;
mod service;
mod temp_dir;

pub use binary::{SERVER_BIN_ENV, find_server_binary, server_binary};
pub use error::HarnessError;
pub use server::{ATTACH_TIMEOUT, READY_TIMEOUT, REGISTER_TIMEOUT, REQUEST_TIMEOUT, RestateServer};
pub use service::{LISTEN_TIMEOUT, SERVICE_ADDR_ENV, ServiceProcess};
