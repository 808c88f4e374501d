//! Durable runs on a real Restate server: an agent function of five model turns and four tool
//! calls against the chaos server, its service process killed with SIGKILL at each step boundary in
//! turn, inside a tool of each kind, and once mid-stream; around a compaction; and a permanent and a
//! transient failure.
//!
//! The service is this test binary run again with the ignored test [`serve_agent`], which serves
//! only when the harness gives it an address. Each run's input says where its first process holds
//! (and is killed): the input is journaled, so the restarted process reads the same, and a hold file
//! per run makes only the first process hold.

use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_restate::{DurableContext, StepReport, durable, service_options, terminal};
use agentic_runtime::compact::Summarize;
use agentic_runtime::exec::{ExecEvent, ExecStream};
use agentic_runtime::provider::OpenAiProvider;
use agentic_runtime::tool::{Delivery, Tool, ToolContext, ToolFuture, Toolbox};
use agentic_runtime::{ExecError, Reply, RetryPolicy, Runtime, agentic_function};
use agentic_test_support::restate::{RestateServer, SERVICE_ADDR_ENV, ServiceProcess};
use agentic_test_support::temp_file::TempFile;
use futures_util::StreamExt as _;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The service's lines wait at most this long (each comes within a second or so).
const LINE_TIMEOUT: Duration = Duration::from_secs(60);
/// The chaos server's OpenAI base URL, for the service.
const CHAOS_URL_ENV: &str = "AGENTIC_RESTATE_TEST_CHAOS_URL";
/// The file each tool run appends a line to: `ran {tool} {idempotency key}`.
const TOOL_LOG_ENV: &str = "AGENTIC_RESTATE_TEST_TOOL_LOG";
/// The directory of the hold files.
const HOLD_DIR_ENV: &str = "AGENTIC_RESTATE_TEST_HOLD_DIR";

/// The tools, in the order the model asks for them: two may run again, two must not.
const TOOLS: [(&str, Delivery); 4] = [
    ("search", Delivery::AtLeastOnce),
    ("send_mail", Delivery::AtMostOnce),
    ("read", Delivery::AtLeastOnce),
    ("charge", Delivery::AtMostOnce),
];
/// The steps that record an at-most-once call's start (the model's calls are steps 2, 5, 9, 12 and
/// 16, each after its start marker; `search` is 3, `read` 10).
const START_STEPS: [(&str, u64); 2] = [("send_mail", 6), ("charge", 13)];
/// The model calls' start markers (of a run without a compaction).
const MARKS: [u64; 5] = [1, 4, 8, 11, 15];
/// Steps of one run: two per model call (its start marker, its record), one per at-least-once
/// call, two per at-most-once call.
const STEPS: u64 = 16;
const ANSWER: &str = "The errands are done.";

/// Where a run's first process holds, to be killed there.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Hold {
    /// After this step is durable.
    after_step: Option<u64>,
    /// Inside this tool, after it acted.
    in_tool: Option<String>,
    /// At the answer's first streamed text.
    mid_stream: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Errand {
    label: String,
    hold: Hold,
    /// No session retries: a failed call goes to layer 2 at once, which waits between steps.
    #[serde(default)]
    layer_two: bool,
    /// A compactor (`Summarize`), and a script whose third turn overflows the context window.
    #[serde(default)]
    compact: bool,
}

impl Errand {
    fn new(label: &str, hold: Hold) -> Self {
        Self { label: label.into(), hold, layer_two: false, compact: false }
    }

    /// The run's steps: a compaction adds three (the call that overflowed, its marker, and the
    /// compaction).
    ///
    /// A kill right after a model call's start marker, or inside the call (mid-stream), leaves a
    /// marker that no record follows: the next process counts the call and marks it again, a step
    /// more.
    fn steps(&self) -> u64 {
        let compaction = if self.compact { 3 } else { 0 };
        STEPS + compaction + u64::from(self.hold.mid_stream || self.killed_after_a_marker())
    }

    /// Killed right after a model call's start marker: the next process counts the call, which it
    /// cannot tell was made.
    fn killed_after_a_marker(&self) -> bool {
        self.hold.after_step.is_some_and(|step| MARKS.contains(&step))
    }
}

/// A tool that writes down each run, with its idempotency key, and holds where the run says.
struct Logged {
    name: &'static str,
    delivery: Delivery,
    hold: Arc<Hold>,
    label: String,
}

impl Tool for Logged {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "Does one errand."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    fn call(&self, _input: Value) -> ToolFuture<'_> {
        Box::pin(async { Err("called without its context".into()) })
    }
    fn call_with(&self, _input: Value, context: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let log = std::env::var(TOOL_LOG_ENV).expect("the test sets the tool log");
            let mut file = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
            writeln!(file, "ran {} {}", self.name, context.idempotency_key())?;
            drop(file);
            if self.hold.in_tool.as_deref() == Some(self.name) {
                hold_once(&self.label, &format!("in tool {}", self.name)).await;
            }
            Ok(format!("{} done", self.name))
        })
    }
    fn delivery(&self) -> Delivery {
        self.delivery
    }
}

/// Holds (until the test kills this process) the first time `label` gets here.
async fn hold_once(label: &str, at: &str) {
    let dir = std::env::var(HOLD_DIR_ENV).expect("the test sets the hold directory");
    let file = Path::new(&dir).join(label);
    if !file.exists() {
        std::fs::write(&file, at).expect("the hold file can be written");
        println!("agentic-hold: {label} {at}");
        std::future::pending::<()>().await;
    }
}

/// Runs the errands, streaming the answer.
#[agentic_function(max_retries = 2)]
async fn errands(runtime: &Runtime, label: &str, hold: &Hold) -> Result<Reply, ExecError> {
    streamed(runtime.exec_stream("Do my errands."), label, hold).await
}

/// The same errands with no session retries: a failed call goes to layer 2 at once, which waits
/// (the server's Retry-After) between two steps.
#[agentic_function(max_retries = 2, session_retries = 0)]
async fn errands_in_layer_two(runtime: &Runtime, label: &str, hold: &Hold) -> Result<Reply, ExecError> {
    streamed(runtime.exec_stream("Do my errands."), label, hold).await
}

/// The reply of `stream`, holding at its first text when the run says so.
async fn streamed(mut stream: ExecStream<'_>, label: &str, hold: &Hold) -> Result<Reply, ExecError> {
    let mut shown = false;
    while let Some(event) = stream.next().await {
        match event {
            ExecEvent::TextDelta(_) if !shown => {
                shown = true;
                if hold.mid_stream {
                    hold_once(label, "mid-stream").await;
                }
            }
            ExecEvent::Done(done) => return done,
            _ => {}
        }
    }
    unreachable!("an exec stream ends with Done")
}

struct Agent {
    chaos_url: String,
}

#[restate_sdk::service]
impl Agent {
    #[handler]
    async fn run(&self, ctx: Context<'_>, errand: Json<Errand>) -> Result<Json<Reply>, HandlerError> {
        run_errand(&ctx, &self.chaos_url, errand.into_inner()).await
    }
}

/// The same agent as a virtual object, one per key: its exclusive handler's context is an
/// `ObjectContext`.
struct AgentObject {
    chaos_url: String,
}

#[restate_sdk::object]
impl AgentObject {
    #[handler]
    async fn run(&self, ctx: ObjectContext<'_>, errand: Json<Errand>) -> Result<Json<Reply>, HandlerError> {
        run_errand(&ctx, &self.chaos_url, errand.into_inner()).await
    }
}

/// One errand as a durable run in `ctx`, printing each step and holding where the errand says.
async fn run_errand<C: DurableContext>(ctx: &C, chaos_url: &str, errand: Errand) -> Result<Json<Reply>, HandlerError> {
    let Errand { label, hold, layer_two, compact } = errand;
    let hold = Arc::new(hold);
    let mut tools = Toolbox::new();
    for (name, delivery) in TOOLS {
        tools = tools.with_tool(Logged { name, delivery, hold: hold.clone(), label: label.clone() });
    }
    let policy = RetryPolicy::new().with_session_base_delay_ms(10).with_exec_base_delay_ms(10);
    let mut runtime =
        Runtime::builder(OpenAiProvider::new(chaos_url.to_owned(), None)).with_policy(policy).with_tools(tools);
    if compact {
        runtime = runtime.with_compactor(Summarize::keeping(1));
    }
    let runtime = runtime.build().expect("a valid runtime");
    let hook_label = label.clone();
    let hook_hold = hold.clone();
    let reply = durable(ctx)
        .on_step(move |step: &StepReport| {
            let how = if step.replayed { "replayed" } else { "called" };
            println!("agentic-step: {hook_label} {} {how} {}", step.index, step.about);
            if hook_hold.after_step == Some(step.index) {
                // Holds the handler's thread: the test kills the process here.
                let dir = std::env::var(HOLD_DIR_ENV).expect("the test sets the hold directory");
                let file = Path::new(&dir).join(&hook_label);
                if !file.exists() {
                    std::fs::write(&file, "after step").expect("the hold file can be written");
                    println!("agentic-hold: {hook_label} after step {}", step.index);
                    loop {
                        std::thread::park();
                    }
                }
            }
        })
        .run(async {
            match layer_two {
                false => errands(&runtime, &label, &hold).await,
                true => errands_in_layer_two(&runtime, &label, &hold).await,
            }
        })
        .await;
    reply.map(Json).map_err(terminal)
}

/// Not a test: the service process of this module's tests. It serves only when run by the harness
/// (which sets [`SERVICE_ADDR_ENV`]); run any other way (`cargo test -- --ignored`), it returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the service process of the durable tests, which run this binary again"]
async fn serve_agent() {
    let Ok(addr) = std::env::var(SERVICE_ADDR_ENV) else { return };
    let chaos_url = std::env::var(CHAOS_URL_ENV).expect("the test sets the chaos server's URL");
    let listener = tokio::net::TcpListener::bind(&addr).await.expect("the service binds the harness's address");
    let policy = RetryPolicy::new();
    let options = service_options(&policy, &Toolbox::new());
    let object = AgentObject { chaos_url: chaos_url.clone() }.into_service_definition().options(options.clone());
    let agent = Agent { chaos_url }.into_service_definition().options(options);
    HttpServer::new(Endpoint::builder().bind(agent).bind(object).build()).serve(listener).await;
}

/// This binary, running only the ignored test `entry` of this module (its output not captured).
fn this_binary_running(entry: &str) -> Command {
    let module = module_path!().split_once("::").map_or("", |(_, module)| module);
    let mut command = Command::new(std::env::current_exe().expect("the test binary's path"));
    command.args([&format!("{module}::{entry}"), "--exact", "--ignored", "--nocapture", "--test-threads=1"]);
    command
}

/// The model's side of one run: four turns that each ask for one tool, then the answer.
fn errand_script(mid_stream: bool) -> Scenario {
    let mut scenario = Scenario::new();
    for (name, _) in TOOLS {
        scenario = scenario.then(Step::tool_use(name, json!({})));
    }
    if mid_stream {
        // Two chunks shown, then silence: the process is killed while it waits.
        scenario = scenario.then(Step::hang().text(ANSWER).chunks(4).after_chunks(2));
    }
    scenario.then(Step::ok(ANSWER).chunks(4))
}

/// What the test saw of one run.
struct Seen {
    restarts: u32,
    called: usize,
    replayed: usize,
}

struct Bench {
    server: RestateServer,
    service: ServiceProcess,
    chaos: ChaosServer,
    tool_log: TempFile,
}

impl Bench {
    async fn start() -> Self {
        let server = RestateServer::start().await.unwrap_or_else(|error| panic!("{error}"));
        let chaos = ChaosServer::start(Scenario::new()).await.expect("the chaos server starts");
        let tool_log = TempFile::new("tools");
        let holds = tempdir();
        let mut command = this_binary_running("serve_agent");
        command
            .env(CHAOS_URL_ENV, chaos.openai_base_url())
            .env(TOOL_LOG_ENV, tool_log.path())
            .env(HOLD_DIR_ENV, &holds);
        let service = ServiceProcess::spawn(command).await.unwrap_or_else(|error| panic!("{error}"));
        server.register(&service.uri()).await.unwrap_or_else(|error| panic!("{error}"));
        Self { server, service, chaos, tool_log }
    }

    /// Runs `errand` once on its script, killing its first process where it holds.
    async fn run(&mut self, errand: Errand) -> Seen {
        let script = errand_script(errand.hold.mid_stream);
        self.run_on("Agent", errand, script).await
    }

    /// Runs `errand` once on `script`, killing its first process where it holds: it completes, each
    /// scripted answer was served once, each tool ran as its delivery allows, each step is once in
    /// Restate's journal and was done once.
    async fn run_on(&mut self, target: &str, errand: Errand, script: Scenario) -> Seen {
        let (label, steps_of_run) = (errand.label.clone(), errand.steps());
        let holds = errand.hold.after_step.is_some() || errand.hold.in_tool.is_some() || errand.hold.mid_stream;
        let scripted = script.steps().len();
        self.chaos.set_scenario(script);
        let body = serde_json::to_value(&errand).expect("an errand is JSON");
        let id = self.server.send(target, "run", &label, &body).await.unwrap_or_else(|error| panic!("{error}"));
        let mut restarts = 0;
        if holds {
            self.service
                .wait_for_line(&format!("agentic-hold: {label} "), LINE_TIMEOUT)
                .await
                .unwrap_or_else(|error| panic!("{label}: {error}\n{}", self.service.stderr_tail(30)));
            self.service.kill().unwrap_or_else(|error| panic!("{error}"));
            self.service.restart().await.unwrap_or_else(|error| panic!("{error}"));
            restarts += 1;
        }
        let (status, output) = self.server.attach(&id).await.unwrap_or_else(|error| panic!("{label}: {error}"));
        assert_eq!(status, 200, "{label}: the run completes: {output}\n{}", self.service.stderr_tail(30));
        let reply: Reply = serde_json::from_str(&output).unwrap_or_else(|error| panic!("{label}: {output}: {error}"));
        assert_eq!(reply.text(), ANSWER, "{label}");
        // Every scripted answer was served once (below), and each counts, the cut one too.
        let calls = scripted as u32 + u32::from(errand.killed_after_a_marker());
        assert_eq!(reply.calls(), calls, "{label}: the calls of every process count");

        // Each successful model call once: every scripted answer served once (the cut one too,
        // then the full answer once more).
        let journal = self.chaos.journal();
        let served: Vec<usize> = journal.iter().filter_map(|entry| entry.step.as_ref()?.index).collect();
        assert_eq!(served, (0..scripted).collect::<Vec<_>>(), "{label}: each scripted answer served once, in order");

        // Each at-least-once tool ran at most twice (with one key), each at-most-once tool at most once.
        let log = std::fs::read_to_string(self.tool_log.path()).unwrap_or_default();
        for (tool, delivery) in TOOLS {
            let runs: Vec<&str> = log
                .lines()
                .filter(|line| line.starts_with(&format!("ran {tool} {id}/")))
                .map(|line| line.rsplit(' ').next().unwrap_or_default())
                .collect();
            let killed_inside = errand.hold.in_tool.as_deref() == Some(tool);
            // Killed right after an at-most-once call recorded its start, the call's outcome is
            // unknown to the next process, which does not run it: it never ran.
            let killed_at_start =
                START_STEPS.iter().any(|&(name, step)| name == tool && errand.hold.after_step == Some(step));
            let expected = match delivery {
                Delivery::AtLeastOnce if killed_inside => 2,
                _ if killed_at_start => 0,
                _ => 1,
            };
            assert_eq!(runs.len(), expected, "{label}: `{tool}` ({}) ran {} times: {log}", delivery.name(), runs.len());
            assert!(
                runs.windows(2).all(|pair| pair[0] == pair[1]),
                "{label}: one idempotency key for `{tool}`: {runs:?}"
            );
        }

        // Restate holds each step once, and the service called or replayed each.
        let steps = self.server.journal(&id).await.unwrap_or_else(|error| panic!("{error}"));
        for index in 1..=steps_of_run {
            let name = format!("agentic#{index}");
            let runs =
                steps.iter().filter(|entry| entry["entry_type"] == "Command: Run" && entry["name"] == name).count();
            assert_eq!(runs, 1, "{label}: step {name} journaled once: {steps:#?}");
        }
        // The last process's report of the last step comes last.
        self.service
            .wait_for_line(&format!("agentic-step: {label} {steps_of_run} "), LINE_TIMEOUT)
            .await
            .unwrap_or_else(|error| panic!("{label}: {error}"));
        let lines: Vec<&String> =
            // `contains`: libtest writes the test's name before the output, on the first line.
            self.service.lines().iter().filter(|line| line.contains(&format!("agentic-step: {label} "))).collect();
        let called = lines.iter().filter(|line| line.contains(" called ")).count();
        let replayed = lines.iter().filter(|line| line.contains(" replayed ")).count();
        assert_eq!(called as u64, steps_of_run, "{label}: each step done once: {lines:#?}");
        if let Some(step) = errand.hold.after_step {
            assert_eq!(replayed as u64, step, "{label}: the restart replayed the steps before the kill: {lines:#?}");
        }
        if !holds {
            // Nothing for Restate to retry: the runtime's layers retried inside the steps.
            let transient = self.server.transient_errors(&id).await.unwrap_or_else(|error| panic!("{error}"));
            assert!(transient.is_empty(), "{label}: Restate retried nothing: {transient:#?}");
        }
        Seen { restarts, called, replayed }
    }
}

/// A directory that lives as long as the test process (in the system's temp directory).
fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agentic-restate-holds-{}-{}", std::process::id(), fastrand_u64()));
    std::fs::create_dir_all(&dir).expect("a temp directory");
    dir
}

fn fastrand_u64() -> u64 {
    use std::hash::{BuildHasher as _, RandomState};
    RandomState::new().hash_one(Instant::now())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_survives_a_kill_at_every_step_boundary_in_a_tool_and_mid_stream() {
    let began = Instant::now();
    let mut bench = Bench::start().await;
    let mut errands = vec![Errand::new("whole", Hold::default())];
    for step in 1..=STEPS {
        errands.push(Errand::new(&format!("after-{step}"), Hold { after_step: Some(step), ..Hold::default() }));
    }
    for (tool, _) in TOOLS {
        errands.push(Errand::new(&format!("in-{tool}"), Hold { in_tool: Some(tool.into()), ..Hold::default() }));
    }
    errands.push(Errand::new("mid-stream", Hold { mid_stream: true, ..Hold::default() }));
    let (mut restarts, mut called, mut replayed, mut model_calls) = (0, 0, 0, 0);
    let runs = errands.len();
    for errand in errands {
        let seen = bench.run(errand).await;
        restarts += seen.restarts;
        called += seen.called;
        replayed += seen.replayed;
        model_calls += bench.chaos.requests_served();
    }
    eprintln!(
        "durable runs: {runs} runs, {restarts} SIGKILLs and restarts, {called} steps done, {replayed} replayed, \
         {model_calls} model calls served, in {:?}",
        began.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permanent_failure_ends_the_run_at_once_and_a_transient_one_is_retried_inside_its_step() {
    let mut bench = Bench::start().await;

    // A 401: the runtime's layers judge it permanent, and Restate never retries it.
    bench.chaos.set_scenario(Scenario::new().then(Step::invalid_api_key()));
    let errand = Errand::new("permanent", Hold::default());
    let body = serde_json::to_value(&errand).expect("an errand is JSON");
    let id = bench.server.send("Agent", "run", "permanent", &body).await.unwrap_or_else(|error| panic!("{error}"));
    let (status, output) = bench.server.attach(&id).await.unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(status, 500, "the run fails: {output}");
    assert!(output.contains("AuthenticationError") && output.contains("(permanent)"), "{output}");
    assert_eq!(bench.chaos.requests_served(), 1, "one model call");
    let invocation = bench.server.invocation(&id).await.unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(
        (invocation["status"].as_str(), invocation["completion_result"].as_str()),
        (Some("completed"), Some("failure"))
    );
    let transient = bench.server.transient_errors(&id).await.unwrap_or_else(|error| panic!("{error}"));
    assert!(transient.is_empty(), "one attempt, no engine retry: {transient:#?}");
    let journal = bench.server.journal(&id).await.unwrap_or_else(|error| panic!("{error}"));
    let runs = journal.iter().filter(|entry| entry["entry_type"] == "Command: Run").count();
    assert_eq!(runs, 2, "one model call, its marker and its record: {journal:#?}");

    // A 503 then the errands: the first step's call is retried by layer 1, inside the step.
    let mut script = Scenario::new().then(Step::http_error(503));
    for (name, _) in TOOLS {
        script = script.then(Step::tool_use(name, json!({})));
    }
    let script = script.then(Step::ok(ANSWER).chunks(4));
    let seen = bench.run_on("Agent", Errand::new("transient", Hold::default()), script).await;
    assert_eq!((seen.restarts, seen.replayed), (0, 0));
    assert_eq!(bench.chaos.requests_served(), 6, "the 503 and the five answers");
}

/// Layer 2's wait between two attempts (here the server's Retry-After of 3 s) is Restate's durable
/// timer: a service killed in it is woken, restarted, when the timer ends (not 3 s after the
/// restart), and the journal holds the wait once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_killed_in_a_wait_between_attempts_wakes_when_the_timer_ends() {
    let mut bench = Bench::start().await;
    let mut script = Scenario::new().then(Step::http_error(503).retry_after_secs(3));
    for (name, _) in TOOLS {
        script = script.then(Step::tool_use(name, json!({})));
    }
    bench.chaos.set_scenario(script.then(Step::ok(ANSWER).chunks(4)));
    let errand = Errand { layer_two: true, ..Errand::new("waits", Hold::default()) };
    let body = serde_json::to_value(&errand).expect("an errand is JSON");
    let id = bench.server.send("Agent", "run", "waits", &body).await.unwrap_or_else(|error| panic!("{error}"));

    // Killed once Restate holds the timer (its Sleep command), while the service waits on it.
    let sleeping = |journal: &[serde_json::Map<String, Value>]| {
        journal.iter().filter(|entry| entry["entry_type"] == "Command: Sleep").count()
    };
    let polls = Instant::now();
    loop {
        let journal = bench.server.journal(&id).await.unwrap_or_else(|error| panic!("{error}"));
        if sleeping(&journal) == 1 {
            break;
        }
        assert!(polls.elapsed() < LINE_TIMEOUT, "no Sleep command in the journal: {journal:#?}");
        tokio::task::yield_now().await;
    }
    bench.service.kill().unwrap_or_else(|error| panic!("{error}"));
    bench.service.restart().await.unwrap_or_else(|error| panic!("{error}"));

    let (status, output) = bench.server.attach(&id).await.unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(status, 200, "the run completes: {output}\n{}", bench.service.stderr_tail(30));
    let journal = bench.server.journal(&id).await.unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(sleeping(&journal), 1, "the wait is journaled once: {journal:#?}");
    let runs = journal.iter().filter(|entry| entry["entry_type"] == "Command: Run").count();
    assert_eq!(runs as u64, STEPS + 2, "the failed call (its marker and record) and the run's 16 steps: {journal:#?}");
    assert_eq!(bench.chaos.requests_served(), 6, "the 503 once, then each answer once");
    // The restarted process reports the wait as begun elsewhere: its timer ended before 3 s here.
    bench
        .service
        .wait_for_line("agentic-step: waits 19 ", LINE_TIMEOUT)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let lines = bench.service.lines();
    assert!(
        lines.iter().any(|line| line.contains("agentic-step: waits 3 replayed backoff")),
        "the wait began in the killed process: {lines:#?}\n{}",
        bench.service.stderr_tail(20)
    );
}

/// A virtual object's handler (an `ObjectContext`) runs durably the same way: killed after its
/// fifth step and restarted, it completes with each step done once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_virtual_objects_handler_survives_a_kill_the_same_way() {
    let mut bench = Bench::start().await;
    let errand = Errand::new("object", Hold { after_step: Some(5), ..Hold::default() });
    let seen = bench.run_on("AgentObject/alice", errand, errand_script(false)).await;
    assert_eq!((seen.restarts, seen.replayed), (1, 5));
}

/// The summary that makes room after the overflow.
const SUMMARY: &str = "Summary: the search and the mail are done.";

/// A compaction is a step: a service killed after the call that overflowed compacts in the next
/// process, and one killed after the compaction goes on with the summary it recorded, without
/// asking for it again (each scripted answer, the summary among them, is served once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_around_its_compaction_asks_for_the_summary_once() {
    let mut bench = Bench::start().await;
    // search, send_mail, then an overflow: the summary, and the turn again.
    let script = || {
        let mut script = Scenario::new();
        for &(name, _) in &TOOLS[..2] {
            script = script.then(Step::tool_use(name, json!({})));
        }
        script = script.then(Step::context_overflow()).then(Step::ok(SUMMARY));
        for &(name, _) in &TOOLS[2..] {
            script = script.then(Step::tool_use(name, json!({})));
        }
        script.then(Step::ok(ANSWER).chunks(4))
    };
    // Step 9 is the call that overflowed, 10 the compaction.
    for step in [9, 10] {
        let label = format!("compacted-after-{step}");
        let errand =
            Errand { compact: true, ..Errand::new(&label, Hold { after_step: Some(step), ..Hold::default() }) };
        let seen = bench.run_on("Agent", errand, script()).await;
        assert_eq!((seen.restarts, seen.replayed, seen.called), (1, step as usize, STEPS as usize + 3), "{label}");
        let compaction = format!("agentic-step: {label} 10 ");
        let lines = bench.service.lines();
        let reported: Vec<&String> = lines.iter().filter(|line| line.contains(&compaction)).collect();
        assert!(reported.iter().any(|line| line.contains("compaction by `summarize`")), "{reported:#?}");
    }
}
