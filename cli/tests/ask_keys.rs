//! Which key each target of `agentic ask` sends: the binary against servers on 127.0.0.1 that
//! record the key headers of every request they are sent (the chaos server records only whether
//! there was one). A wire's key goes only to the origin of the base URL it is paired with; any other
//! server gets the key `--fallback-api-key-env` names, or none.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

const K1: &str = "sk-flag-K1-aaaaaaaaaaaaaaaa";
const K2: &str = "sk-env-K2-bbbbbbbbbbbbbbbbb";
const K3: &str = "sk-named-K3-cccccccccccccccc";

/// How a [`KeyServer`] answers every request.
#[derive(Clone, Copy)]
enum Answer {
    /// A Chat Completions stream saying this text.
    Says(&'static str),
    /// OpenAI's 401 for a key it does not know.
    Refuses,
}

/// An OpenAI-compatible server that keeps the key headers (`authorization`, `x-api-key`,
/// `x-goog-api-key`) of each request, `None` for a request with none. It stops when dropped: a
/// flag, and one connection of its own to wake the accepting thread.
struct KeyServer {
    addr: SocketAddr,
    keys: Arc<Mutex<Vec<Option<String>>>>,
    stop: Arc<AtomicBool>,
    accepting: Option<JoinHandle<()>>,
}

impl KeyServer {
    fn start(answer: Answer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (keys, stop) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicBool::new(false)));
        let accepting = {
            let (keys, stop) = (keys.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    serve(stream.unwrap(), answer, &keys);
                }
            })
        };
        Self { addr, keys, stop, accepting: Some(accepting) }
    }

    /// The base URL, `http://127.0.0.1:PORT/v1`.
    fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The key header of each request so far, in order.
    fn keys(&self) -> Vec<Option<String>> {
        self.keys.lock().unwrap().clone()
    }
}

impl Drop for KeyServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(accepting) = self.accepting.take() {
            let _ = accepting.join();
        }
    }
}

/// Reads one request (its head, then `content-length` bytes of body) and answers it.
fn serve(mut stream: TcpStream, answer: Answer, keys: &Mutex<Vec<Option<String>>>) {
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = request.windows(4).position(|window| window == b"\r\n\r\n") {
            break at + 4;
        }
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(read) => request.extend_from_slice(&buffer[..read]),
        }
    };
    let head = String::from_utf8_lossy(&request[..head_end]).into_owned();
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
        })
    };
    let length: usize = header("content-length").and_then(|length| length.parse().ok()).unwrap_or(0);
    while request.len() < head_end + length {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => request.extend_from_slice(&buffer[..read]),
        }
    }
    keys.lock().unwrap().push(["authorization", "x-api-key", "x-goog-api-key"].into_iter().find_map(header));
    let response = match answer {
        Answer::Says(text) => format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n\
             data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":\"stop\"}}]}}\n\n\
             data: [DONE]\n\n"
        ),
        Answer::Refuses => {
            let body = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#;
            format!(
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{body}",
                body.len()
            )
        }
    };
    let _ = stream.write_all(response.as_bytes());
}

/// Runs `agentic args..` with no provider variable from the environment but those of `env`.
fn agentic(args: &[impl AsRef<std::ffi::OsStr>], env: &[(&str, &str)]) -> Output {
    crate::common::agentic_command(&[]).args(args).envs(env.iter().copied()).output().expect("the agentic binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// No key, and no run of 8 bytes of one (docs/design.md §19), anywhere in what the CLI printed.
fn assert_no_key_shown(output: &Output) {
    let printed = format!("{}\n{}", text(&output.stdout), text(&output.stderr));
    for key in [K1, K2, K3] {
        for window in key.as_bytes().windows(8) {
            let piece = std::str::from_utf8(window).unwrap();
            assert!(!printed.contains(piece), "`{piece}` of a key is shown:\n{printed}");
        }
    }
}

fn bearer(key: &str) -> Option<String> {
    Some(format!("Bearer {key}"))
}

/// `ask --api-key K1 --base-url A --fallback-provider openai --fallback-base-url B -v --json`,
/// fast delays, then `rest` (before the prompt).
fn args(a: &str, b: &str, rest: &[&str]) -> Vec<String> {
    let mut args = vec!["ask", "--api-key", K1, "--base-url", a, "--fallback-provider", "openai"];
    args.extend(["--fallback-base-url", b, "--session-retries", "0", "--exec-base-delay-ms", "1", "-v", "--json"]);
    args.extend(rest);
    args.push("say hi");
    args.into_iter().map(str::to_owned).collect()
}

/// A common setup: OPENAI_API_KEY set, the primary's key on the command line, a fallback
/// at a server of its own. The primary gets its flag's key; the fallback, which is not where
/// OPENAI_API_KEY goes (OPENAI_BASE_URL is unset: OpenAI's own API), gets none.
#[test]
fn a_fallback_on_another_host_gets_no_key_from_the_wires_variables() {
    let (a, b) = (KeyServer::start(Answer::Refuses), KeyServer::start(Answer::Says("hi from B")));
    let output = agentic(&args(&a.url(), &b.url(), &[]), &[("OPENAI_API_KEY", K2)]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["answer"], "hi from B");
    assert_eq!(a.keys(), [bearer(K1)], "A gets --api-key");
    assert_eq!(b.keys(), [None], "B gets no key");
    assert_no_key_shown(&output);
}

/// `--fallback-api-key-env VAR`: the fallback gets exactly the key VAR holds.
#[test]
fn a_fallback_gets_the_key_its_named_variable_holds() {
    let (a, b) = (KeyServer::start(Answer::Refuses), KeyServer::start(Answer::Says("hi from B")));
    let output = agentic(
        &args(&a.url(), &b.url(), &["--fallback-api-key-env", "B_GATEWAY_KEY"]),
        &[("OPENAI_API_KEY", K2), ("B_GATEWAY_KEY", K3)],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!((a.keys(), b.keys()), (vec![bearer(K1)], vec![bearer(K3)]));
    assert_no_key_shown(&output);
}

/// A fallback on the origin OPENAI_BASE_URL names gets OPENAI_API_KEY, whatever the path or a
/// trailing `/`; the primary, given by --base-url on another origin and no --api-key, gets none.
#[test]
fn a_fallback_on_the_origin_of_the_wires_base_url_gets_its_key_and_a_primary_elsewhere_none() {
    let (a, b) = (KeyServer::start(Answer::Refuses), KeyServer::start(Answer::Says("hi from B")));
    let b_root = format!("http://{}/", b.addr);
    let mut args = args(&a.url(), &b.url(), &[]);
    args.drain(1..3); // no --api-key
    let output = agentic(&args, &[("OPENAI_API_KEY", K2), ("OPENAI_BASE_URL", &b_root)]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!((a.keys(), b.keys()), (vec![None], vec![bearer(K2)]));
    assert_no_key_shown(&output);
}

/// The primary's `--api-key-env VAR`: the key VAR holds, at any base URL.
#[test]
fn the_primary_gets_the_key_its_named_variable_holds() {
    let a = KeyServer::start(Answer::Says("hi from A"));
    let output = agentic(
        &["ask", "--base-url", &a.url(), "--api-key-env", "A_KEY", "say hi"],
        &[("OPENAI_API_KEY", K2), ("A_KEY", K3)],
    );
    assert_eq!((output.status.code(), text(&output.stdout).as_str()), (Some(0), "hi from A\n"));
    assert_eq!(a.keys(), [bearer(K3)]);
    assert_no_key_shown(&output);
}

/// When the exec fails, a note says which set key a target was not sent, and how to send one.
#[test]
fn a_failed_exec_says_which_key_was_withheld_from_which_target() {
    let (a, b) = (KeyServer::start(Answer::Refuses), KeyServer::start(Answer::Refuses));
    let output = agentic(&args(&a.url(), &b.url(), &[]), &[("OPENAI_API_KEY", K2)]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    let note = format!(
        "note: OPENAI_API_KEY is set, but was not sent to `{}` (fallback 1 (openai)): a wire's key goes only to \
         the origin of the base URL it is paired with, https://api.openai.com/v1 (OPENAI_BASE_URL is unset); to \
         send that server a key, set a variable to it and pass --fallback-api-key-env VAR\n",
        b.url()
    );
    assert!(stderr.ends_with(&note), "{stderr}");
    assert_eq!(stderr.matches("note:").count(), 1, "the primary had its --api-key: {stderr}");
    assert_no_key_shown(&output);
}

/// A usage error (exit 2) before any request, and what it says.
fn refused(rest: &[&str], env: &[(&str, &str)]) -> String {
    let (a, b) = (KeyServer::start(Answer::Refuses), KeyServer::start(Answer::Says("hi from B")));
    let output = agentic(&args(&a.url(), &b.url(), rest), env);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(output.stdout.is_empty());
    assert_eq!((a.keys(), b.keys()), (vec![], vec![]), "no request was made");
    assert_no_key_shown(&output);
    text(&output.stderr)
}

#[test]
fn a_named_variable_that_is_unset_or_not_a_name_is_a_usage_error_before_any_request() {
    assert_eq!(
        refused(&["--fallback-api-key-env", "B_GATEWAY_KEY"], &[("OPENAI_API_KEY", K2), ("B_GATEWAY_KEY", "")]),
        "error: --fallback-api-key-env B_GATEWAY_KEY (for fallback 1 (openai)) names a variable that is not set, \
         or is empty: set B_GATEWAY_KEY to the key for that server, or leave --fallback-api-key-env out to send it \
         none\n"
    );
    // The key itself, passed where a name goes: refused, and not shown.
    assert_eq!(
        refused(&["--fallback-api-key-env", K3], &[("OPENAI_API_KEY", K2)]),
        "error: --fallback-api-key-env for fallback 1 (openai) is not an environment variable's name (upper-case \
         letters, digits and `_`, e.g. MY_GATEWAY_KEY), so it is not shown, in case it is a key: pass the name of \
         a variable that holds the key, never the key itself\n"
    );
    let mut no_api_key = args("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1", &["--api-key-env", "A_KEY"]);
    no_api_key.drain(1..3);
    let output = agentic(&no_api_key, &[]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "error: --api-key-env A_KEY (for openai) names a variable that is not set, or is empty: set A_KEY to the \
         key for that server, or leave --api-key-env out to send it none\n"
    );
    // One for each fallback, or none.
    let two = ["--fallback-provider", "openai", "--fallback-base-url", "http://127.0.0.1:9/v1"];
    let stderr = refused(&[&two[..], &["--fallback-api-key-env", "B_GATEWAY_KEY"]].concat(), &[("B_GATEWAY_KEY", K3)]);
    assert_eq!(
        stderr,
        "error: fallback 2 (--fallback-provider openai) has no --fallback-api-key-env: give one for each \
         --fallback-provider, or give none (each fallback then gets its wire's key only at the origin that key \
         goes with; \"\" for one of them names no variable); the n-th --fallback-api-key-env goes with the n-th \
         --fallback-provider\n"
    );
}

/// `""` for a fallback that names no variable: it takes its wire's rule, the next its named key.
#[test]
fn an_empty_name_leaves_one_fallback_to_its_wires_rule() {
    let (a, b, c) = (
        KeyServer::start(Answer::Refuses),
        KeyServer::start(Answer::Refuses),
        KeyServer::start(Answer::Says("hi from C")),
    );
    let c_url = c.url();
    let rest = ["--fallback-provider", "openai", "--fallback-base-url", &c_url, "--fallback-api-key-env", ""];
    let rest = [&rest[..], &["--fallback-api-key-env", "C_KEY"]].concat();
    let output = agentic(&args(&a.url(), &b.url(), &rest), &[("OPENAI_API_KEY", K2), ("C_KEY", K3)]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!((a.keys(), b.keys(), c.keys()), (vec![bearer(K1)], vec![None], vec![bearer(K3)]));
    assert_no_key_shown(&output);
}
