//! `agentic chaos`: serve a fault-injecting server of the four model wires until stopped.

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use agentic_chaos::{ChaosServer, Scenario, SilentServer, WireFormat};

use crate::input::usage_error;

/// The help text of `agentic chaos`.
pub(crate) const LONG_ABOUT: &str = "\
Serve a fault-injecting server on 127.0.0.1 that speaks the four wires `agentic ask --provider` \
names: OpenAI's Chat Completions (POST /v1/chat/completions), Anthropic's Messages (POST \
/v1/messages), Google's Gemini (POST /v1beta/models/{model}:streamGenerateContent) and OpenAI's \
Responses (POST /v1/responses), failing request by request as the scenario file says. Prints each \
wire's base URL (point `agentic ask --provider P --base-url`, OPENAI_BASE_URL, ANTHROPIC_BASE_URL or \
GEMINI_BASE_URL at it) and serves until interrupted (Ctrl-C). The journal of every request is at \
GET /_chaos/journal; POST /_chaos/reset starts the scenario again.

The scenario file's format is documented in the agentic-chaos crate: \
{\"steps\": [{\"kind\": \"http_error\", \"status\": 429, \"retry_after\": 2, \"times\": 2}, \
{\"kind\": \"drop_stream\", \"after_chunks\": 3}], \"default\": {\"kind\": \"ok\", \"text\": \"hi\"}}

With --silent-store it also serves a store that accepts connections and never answers (a Redis that \
hangs), on a port of its own, and prints its URL: point a fleet store at it (`RedisStore::connect`) \
to see your agents go on with local state.

Exit 2 for a bad scenario file (the message names the file, the field and the line) or a port in use.";

/// `agentic chaos` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The scenario file (JSON).
    #[arg(long, value_name = "FILE")]
    scenario: PathBuf,
    /// The port to listen on (127.0.0.1 only) [default: any free port].
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
    port: u16,
    /// Also serve a store that accepts connections and never answers, and print its URL.
    #[arg(long)]
    silent_store: bool,
}

/// Runs `agentic chaos`.
pub(crate) fn run(args: &Args) -> ExitCode {
    let scenario = match Scenario::load(&args.scenario) {
        Ok(scenario) => scenario,
        Err(error) => return usage_error(error),
    };
    let tokio = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(tokio) => tokio,
        Err(error) => return usage_error(format!("cannot start the async runtime: {error}")),
    };
    tokio.block_on(async {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
        let server = match ChaosServer::start_on(addr, scenario).await {
            Ok(server) => server,
            Err(error) => return usage_error(format!("cannot listen on {addr}: {error}")),
        };
        for wire in WireFormat::ALL {
            println!("{:<20}{}", format!("{} base URL:", wire.name()), server.base_url(wire));
        }
        println!("journal:            http://{}/_chaos/journal", server.addr());
        // Kept until the end: dropping it stops it.
        let silent = match args.silent_store.then(SilentServer::start) {
            Some(start) => match start.await {
                Ok(silent) => Some(silent),
                Err(error) => return usage_error(format!("cannot listen for the silent store: {error}")),
            },
            None => None,
        };
        if let Some(silent) = &silent {
            println!("silent store:       {}", silent.url());
        }
        println!("serving until interrupted (Ctrl-C)");
        let _ = std::io::stdout().flush();
        if let Err(error) = tokio::signal::ctrl_c().await {
            eprintln!("error: cannot wait for Ctrl-C: {error}");
        }
        println!("served {} requests", server.requests_served());
        server.shutdown().await;
        ExitCode::SUCCESS
    })
}
