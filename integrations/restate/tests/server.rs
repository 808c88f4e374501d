//! The test harness itself (`agentic_test_support::restate`): a Restate server of the test's own,
//! a service in a child process killed with SIGKILL between two journaled steps and restarted on
//! the same address, and the invocation completing with each step's closure run once.
//!
//! The service is this test binary run again with the ignored test [`serve_steps`], which serves
//! only when the harness gives it an address ([`SERVICE_ADDR_ENV`]).

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use agentic_test_support::restate::{
    RestateServer, SERVER_BIN_ENV, SERVICE_ADDR_ENV, ServiceProcess, find_server_binary,
};
use agentic_test_support::temp_file::TempFile;
use restate_sdk::prelude::*;

/// The service's lines wait at most this long (each comes within a second or so).
const LINE_TIMEOUT: Duration = Duration::from_secs(60);
/// The environment variable naming the file whose presence lets the handler go past its first
/// step: the first process finds none, creates it and holds (so the test kills it there), the
/// restarted one finds it and goes on.
const HOLD_FILE_ENV: &str = "AGENTIC_RESTATE_TEST_HOLD_FILE";

/// Two journaled steps, each printing a line when its closure runs (not when it is replayed).
struct Steps;

#[restate_sdk::service]
impl Steps {
    #[handler]
    async fn two(&self, ctx: Context<'_>, name: String) -> Result<String, HandlerError> {
        let pid = std::process::id();
        let first = ctx
            .run(|| async {
                println!("agentic-step: step1 ran pid={pid}");
                Ok(format!("one for {name} by {pid}"))
            })
            .name("step1")
            .await?;
        // Past this await the step is durable: the server has it.
        println!("agentic-step: after step1 pid={pid}");
        let hold = std::env::var_os(HOLD_FILE_ENV).expect("the test sets the hold file");
        if !Path::new(&hold).exists() {
            std::fs::write(&hold, "held").expect("the hold file can be written");
            println!("agentic-step: holding pid={pid}");
            // Until the test kills this process (bounded by the test's own waits).
            std::future::pending::<()>().await;
        }
        let second = ctx
            .run(|| async {
                println!("agentic-step: step2 ran pid={pid}");
                Ok(format!("two for {name} by {pid}"))
            })
            .name("step2")
            .await?;
        Ok(format!("{first}; {second}"))
    }
}

/// Not a test: the service process of [`a_killed_service_resumes_after_its_durable_step`]. It
/// serves only when run by the harness (which sets [`SERVICE_ADDR_ENV`]); run any other way (e.g.
/// `cargo test -- --ignored`), it returns at once.
#[tokio::test]
#[ignore = "the service process of a_killed_service_resumes_after_its_durable_step, which runs this binary again"]
async fn serve_steps() {
    let Ok(addr) = std::env::var(SERVICE_ADDR_ENV) else { return };
    let listener = tokio::net::TcpListener::bind(&addr).await.expect("the service binds the harness's address");
    HttpServer::new(Endpoint::builder().bind(Steps).build()).serve(listener).await;
}

/// This binary, running only the ignored test `entry` of this module (its output not captured).
fn this_binary_running(entry: &str) -> Command {
    // `integration::server` -> `server::entry`, the name libtest knows the test by.
    let module = module_path!().split_once("::").map_or("", |(_, module)| module);
    let mut command = Command::new(std::env::current_exe().expect("the test binary's path"));
    command.args([&format!("{module}::{entry}"), "--exact", "--ignored", "--nocapture", "--test-threads=1"]);
    command
}

fn count(lines: &[String], needle: &str) -> usize {
    lines.iter().filter(|line| line.contains(needle)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_service_resumes_after_its_durable_step() {
    let began = Instant::now();
    let server = RestateServer::start().await.unwrap_or_else(|error| panic!("{error}"));
    let started = began.elapsed();

    let hold = TempFile::new("hold");
    let mut command = this_binary_running("serve_steps");
    command.env(HOLD_FILE_ENV, hold.path());
    let mut service = ServiceProcess::spawn(command).await.unwrap_or_else(|error| panic!("{error}"));
    let deployment = server.register(&service.uri()).await.unwrap_or_else(|error| panic!("{error}"));
    assert!(deployment["services"].to_string().contains("Steps"), "the deployment serves Steps: {deployment}");
    let registered = began.elapsed();

    let id = server
        .send("Steps", "two", "harness-smoke-1", &serde_json::json!("bob"))
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    service.wait_for_line("agentic-step: holding", LINE_TIMEOUT).await.unwrap_or_else(|error| panic!("{error}"));
    let first_pid = service.pid().expect("the first process runs");
    service.kill().unwrap_or_else(|error| panic!("{error}"));
    let killed = Instant::now();
    service.restart().await.unwrap_or_else(|error| panic!("{error}"));
    let second_pid = service.pid().expect("the second process runs");
    assert_ne!(first_pid, second_pid);

    let (status, body) = server.attach(&id).await.unwrap_or_else(|error| panic!("{error}\n{}", server.log_tail(20)));
    let resumed = killed.elapsed();
    assert_eq!(status, 200, "the invocation succeeds: {body}");
    let output: String =
        serde_json::from_str(&body).unwrap_or_else(|error| panic!("the output {body:?} is a JSON string: {error}"));
    // Step 1's result is the first process's, recorded; step 2 ran in the second.
    assert_eq!(output, format!("one for bob by {first_pid}; two for bob by {second_pid}"));

    // The second process printed its replayed step 1's line before step 2 ran.
    service.wait_for_line("agentic-step: step2 ran", LINE_TIMEOUT).await.unwrap_or_else(|error| panic!("{error}"));
    let lines = service.lines();
    assert_eq!(count(lines, "agentic-step: step1 ran"), 1, "step 1's closure ran once: {lines:?}");
    assert_eq!(
        count(lines, &format!("agentic-step: after step1 pid={second_pid}")),
        1,
        "the restart replayed step 1: {lines:?}"
    );
    assert_eq!(count(lines, "agentic-step: step2 ran"), 1, "step 2's closure ran once: {lines:?}");

    let journal = server.journal(&id).await.unwrap_or_else(|error| panic!("{error}"));
    let runs = |name: &str| {
        journal.iter().filter(|entry| entry["entry_type"] == "Command: Run" && entry["name"] == name).count()
    };
    assert_eq!((runs("step1"), runs("step2")), (1, 1), "each step journaled once: {journal:#?}");
    let invocation = server.invocation(&id).await.unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(invocation["status"], "completed", "{invocation:?}");
    assert_eq!(invocation["completion_result"], "success", "{invocation:?}");
    // The kill broke the attempt: the server recorded why it tried again.
    let transient = server.transient_errors(&id).await.unwrap_or_else(|error| panic!("{error}"));
    assert!(!transient.is_empty(), "the killed attempt left a transient error: {journal:#?}");

    eprintln!(
        "harness timings: server ready {started:?}, service registered {registered:?}, resumed and completed {resumed:?} after the kill, {} transient error rows",
        transient.len()
    );
}

#[test]
fn without_a_server_binary_the_error_says_what_to_set() {
    let error = find_server_binary(None, Some(OsStr::new(""))).expect_err("no binary").to_string();
    for needed in [SERVER_BIN_ENV, "`restate-server` on PATH", ".ci/restate.sh", "@restatedev/restate-server"] {
        assert!(error.contains(needed), "{needed:?} in {error:?}");
    }
    let missing = TempFile::new("restate-server");
    let error = find_server_binary(Some(missing.path().as_os_str()), None).expect_err("not a file").to_string();
    assert!(error.contains(SERVER_BIN_ENV) && error.contains("is not a file"), "{error}");
}

#[test]
fn the_npm_node_wrapper_is_resolved_to_the_platform_binary() {
    let root = TempFile::new("npm-prefix");
    let modules = root.path().join("node_modules");
    let package = modules.join("@restatedev/restate-server");
    let platform = modules.join(format!("@restatedev/restate-server-{}/bin", node_platform()));
    let bin = modules.join(".bin");
    for dir in [package.join("lib"), platform.clone(), bin.clone()] {
        std::fs::create_dir_all(dir).expect("the temp directory is writable");
    }
    std::fs::write(package.join("lib/index.js"), "#!/usr/bin/env node\nrun();\n").expect("writable");
    std::fs::write(platform.join("restate-server"), b"\x7fELF").expect("writable");
    std::os::unix::fs::symlink("../@restatedev/restate-server/lib/index.js", bin.join("restate-server"))
        .expect("a symlink");

    let from_path = find_server_binary(None, Some(bin.as_os_str())).unwrap_or_else(|error| panic!("{error}"));
    let from_env = find_server_binary(Some(bin.join("restate-server").as_os_str()), None)
        .unwrap_or_else(|error| panic!("{error}"));
    let expected = std::fs::canonicalize(platform.join("restate-server")).expect("it exists");
    assert_eq!(std::fs::canonicalize(from_path).expect("found"), expected);
    assert_eq!(std::fs::canonicalize(from_env).expect("found"), expected);

    // Without the platform package, the wrapper is refused: killing it would leave the server running.
    std::fs::remove_dir_all(modules.join(format!("@restatedev/restate-server-{}", node_platform())))
        .expect("removable");
    let error = find_server_binary(None, Some(bin.as_os_str())).expect_err("only the wrapper").to_string();
    assert!(error.contains("Node wrapper") && error.contains(SERVER_BIN_ENV), "{error}");
    std::fs::remove_dir_all(root.path()).expect("removable");
}

/// This platform as npm's packages name it (`linux-x64`).
fn node_platform() -> String {
    let os = if cfg!(target_os = "macos") { "darwin" } else { std::env::consts::OS };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("{os}-{arch}")
}
