//! A durable agent run on Restate, killed mid-run and restarted: `cargo run -p agentic-restate
//! --example durable`. It needs a Restate server binary (`RESTATE_SERVER_BIN`, or `restate-server`
//! on PATH: `source .ci/restate.sh && install_restate` installs one from npm).
//!
//! The example starts a Restate server on 127.0.0.1, the chaos server as the model (three tool
//! turns, then the answer), and itself again as the service process. The service's first process
//! is killed with SIGKILL after its third step; Restate invokes the handler again in a new process,
//! which replays the three recorded steps (no model call, no tool run) and calls the rest. It prints
//! each step as the service reports it, and exits 1 if a model call or a tool ran twice.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Duration;

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_restate::{StepReport, durable, service_options, terminal};
use agentic_runtime::provider::OpenAiProvider;
use agentic_runtime::tool::{Delivery, Toolbox};
use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};
use agentic_test_support::restate::{RestateServer, SERVICE_ADDR_ENV, ServiceProcess};
use restate_sdk::prelude::*;
use serde_json::json;

/// The chaos server's OpenAI base URL, for the service process.
const CHAOS_URL_ENV: &str = "AGENTIC_DURABLE_CHAOS_URL";
/// The file whose presence tells a service process it is not the first (the first one holds).
const MARK_ENV: &str = "AGENTIC_DURABLE_MARK";
/// The first process is killed once this step is durable.
const KILL_AFTER_STEP: u64 = 3;

/// Plans a trip with the tools at hand.
#[agentic_function(max_retries = 3)]
async fn plan_trip(runtime: &Runtime, request: &str) -> Result<Reply, ExecError> {
    runtime.exec(request).await
}

struct Planner {
    runtime: Runtime,
}

#[restate_sdk::service]
impl Planner {
    #[handler]
    async fn plan(&self, ctx: Context<'_>, request: String) -> Result<Json<Reply>, HandlerError> {
        let reply = durable(&ctx)
            .on_step(|step: &StepReport| {
                let how = if step.replayed { "replayed" } else { "called  " };
                println!("service[{}]: step {} {how} {}", std::process::id(), step.index, step.about);
                if step.index == KILL_AFTER_STEP && !step.replayed {
                    hold_the_first_time();
                }
            })
            .run(plan_trip(&self.runtime, &request))
            .await;
        reply.map(Json).map_err(terminal)
    }
}

/// The first process waits here for its SIGKILL (the example's way to die at a step boundary).
fn hold_the_first_time() {
    let mark = std::env::var(MARK_ENV).expect("the example sets the mark file");
    if !Path::new(&mark).exists() {
        std::fs::write(&mark, "killed once").expect("the mark file can be written");
        println!("service[{}]: holding after step {KILL_AFTER_STEP}: kill me", std::process::id());
        loop {
            std::thread::park();
        }
    }
}

/// The tools: `search_flights` only reads (it may run again), `book_hotel` books (at most once).
fn tools() -> Toolbox {
    Toolbox::new()
        .with_fn("search_flights", "Searches flights.", json!(null), |_| async {
            println!("service[{}]: tool search_flights ran", std::process::id());
            Ok("LIS 09:40, 212 EUR".to_owned())
        })
        .with_fn("book_hotel", "Books a hotel room.", json!(null), |_| async {
            println!("service[{}]: tool book_hotel ran", std::process::id());
            Ok("booked: Alfama, 2 nights".to_owned())
        })
        .with_delivery("search_flights", Delivery::AtLeastOnce)
}

async fn serve(addr: String) {
    let chaos_url = std::env::var(CHAOS_URL_ENV).expect("the example sets the chaos server's URL");
    let runtime =
        Runtime::builder(OpenAiProvider::new(chaos_url, None)).with_tools(tools()).build().expect("a valid runtime");
    let options = service_options(runtime.policy(), &tools());
    let planner = Planner { runtime }.into_service_definition().options(options);
    let listener = tokio::net::TcpListener::bind(&addr).await.expect("the service binds its address");
    HttpServer::new(Endpoint::builder().bind(planner).build()).serve(listener).await;
}

#[tokio::main]
async fn main() -> ExitCode {
    if let Ok(addr) = std::env::var(SERVICE_ADDR_ENV) {
        serve(addr).await;
        return ExitCode::SUCCESS;
    }
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("durable: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let server = RestateServer::start().await.map_err(|error| error.to_string())?;
    println!("restate-server on {} (admin {})", server.ingress_url(), server.admin_url());
    let script = Scenario::new()
        .then(Step::tool_use("search_flights", json!({"to": "LIS"})))
        .then(Step::tool_use("book_hotel", json!({"area": "Alfama"})))
        .then(Step::tool_use("search_flights", json!({"to": "OPO"})))
        .then(Step::ok("Fly to Lisbon at 09:40; your room in Alfama is booked."));
    let chaos = ChaosServer::start(script).await.map_err(|error| error.to_string())?;
    let mark = std::env::temp_dir().join(format!("agentic-durable-example-{}", std::process::id()));
    let _ = std::fs::remove_file(&mark);
    let mut command = Command::new(std::env::current_exe().map_err(|error| error.to_string())?);
    command.env(CHAOS_URL_ENV, chaos.openai_base_url()).env(MARK_ENV, &mark);
    let mut service = ServiceProcess::spawn(command).await.map_err(|error| error.to_string())?;
    server.register(&service.uri()).await.map_err(|error| error.to_string())?;

    let id = server
        .send("Planner", "plan", "trip-1", &json!("Plan a weekend in Lisbon."))
        .await
        .map_err(|error| error.to_string())?;
    println!("invocation {id} sent");
    service.wait_for_line("kill me", Duration::from_secs(60)).await.map_err(|error| error.to_string())?;
    service.kill().map_err(|error| error.to_string())?;
    println!("example: SIGKILL sent to the service; starting it again");
    service.restart().await.map_err(|error| error.to_string())?;
    let (status, output) = server.attach(&id).await.map_err(|error| error.to_string())?;
    service.wait_for_line("step 12 ", Duration::from_secs(60)).await.map_err(|error| error.to_string())?;
    for line in service.lines() {
        if let Some(at) = line.find("service[") {
            println!("{}", &line[at..]);
        }
    }
    println!("Restate's answer (HTTP {status}): {output}");
    let lines = service.lines();
    let count = |needle: &str| lines.iter().filter(|line| line.contains(needle)).count();
    let (called, replayed) = (count(" called "), count(" replayed "));
    let calls = chaos.requests_served();
    println!(
        "{called} steps called, {replayed} replayed after the restart; the model was called {calls} times for 4 turns"
    );
    let _ = std::fs::remove_file(&mark);
    if status != 200 || calls != 4 || count("tool book_hotel ran") != 1 {
        return Err(format!("a paid call or a booking was repeated: {calls} model calls, status {status}"));
    }
    Ok(())
}
