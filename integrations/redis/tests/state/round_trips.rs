//! What a successful call costs in Redis, counted by a proxy on 127.0.0.1 in front of the test
//! server that reads each command a client sends: with a fallback, the standard breaker, the
//! retry quota and pacing on, against a server that states no limits, one command before the
//! call and one after its answer. On the old store it was seven: the cooldown's `GET` (twice on a
//! target with a fallback), the breaker's admission, the pace reservation and settlement, the
//! deposit and the breaker's record.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::{FAST, redis_url, two_targets, with_fallback};

/// The commands clients sent through the proxy: each one's name, and its first key for a script.
#[derive(Clone, Default)]
struct Commands(Arc<Mutex<Vec<String>>>);

impl Commands {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }

    /// Reads the complete commands at the start of `buffer` (RESP arrays of bulk strings), records
    /// them and returns how many bytes they took.
    fn read(&self, buffer: &[u8]) -> usize {
        let mut at = 0;
        while let Some((command, length)) = parse(&buffer[at..]) {
            self.0.lock().unwrap().push(command);
            at += length;
        }
        at
    }
}

/// One command at the start of `bytes`: its name (with the script's first key for `EVALSHA` and
/// `EVAL`) and its length; `None` while incomplete.
fn parse(bytes: &[u8]) -> Option<(String, usize)> {
    let line = |from: usize| -> Option<(&[u8], usize)> {
        let end = bytes[from..].windows(2).position(|pair| pair == b"\r\n")? + from;
        Some((&bytes[from..end], end + 2))
    };
    let (header, mut at) = line(0)?;
    let count: usize = std::str::from_utf8(header.strip_prefix(b"*")?).ok()?.parse().ok()?;
    let mut parts = Vec::with_capacity(count);
    for _ in 0..count {
        let (size, data) = line(at)?;
        let size: usize = std::str::from_utf8(size.strip_prefix(b"$")?).ok()?.parse().ok()?;
        let end = data + size;
        if bytes.len() < end + 2 {
            return None;
        }
        parts.push(String::from_utf8_lossy(&bytes[data..end]).into_owned());
        at = end + 2;
    }
    let mut name = parts.first()?.to_ascii_uppercase();
    if (name == "EVALSHA" || name == "EVAL") && parts.len() > 3 {
        let key = &parts[3];
        let kind = key.rsplit("}:").next().unwrap_or(key);
        name = format!("{name} {}", kind.split(':').next().unwrap_or(kind));
    }
    Some((name, at))
}

/// A proxy to the Redis at `upstream` (`host:port`) on a port of its own: the URL to give a store.
async fn proxy(upstream: String, commands: Commands) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let server = TcpStream::connect(&upstream).await.unwrap();
            let commands = commands.clone();
            tokio::spawn(async move {
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let to_client = tokio::spawn(async move { tokio::io::copy(&mut server_read, &mut client_write).await });
                let mut pending = Vec::new();
                let mut chunk = [0u8; 16 * 1024];
                while let Ok(read) = client_read.read(&mut chunk).await {
                    if read == 0 || server_write.write_all(&chunk[..read]).await.is_err() {
                        break;
                    }
                    pending.extend_from_slice(&chunk[..read]);
                    let used = commands.read(&pending);
                    pending.drain(..used);
                }
                to_client.abort();
            });
        }
    });
    format!("redis://{address}")
}

/// `host:port` of a `redis://[user[:password]@]host:port[/db]` URL.
fn authority(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.split(['/', '?']).next().unwrap_or(rest);
    rest.rsplit_once('@').map_or(rest, |(_, host)| host).to_owned()
}

#[tokio::test]
async fn a_successful_call_with_a_fallback_breaker_budget_and_pacing_costs_two_round_trips() {
    let Some(url) = redis_url("a_successful_call_with_a_fallback_breaker_budget_and_pacing_costs_two_round_trips")
    else {
        return;
    };
    let commands = Commands::default();
    let through = proxy(authority(&url), commands.clone()).await;
    let store = crate::support::store(&through, &crate::support::prefix("round-trips")).await;
    let (primary, secondary) = two_targets();
    let runtime = with_fallback(&primary, &secondary, store);
    // The first exec connects and loads the scripts (`NOSCRIPT`, then `EVAL`): not counted.
    runtime.request("warm").policy(&FAST).send().await.unwrap();
    commands.take();

    const EXECS: usize = 20;
    for _ in 0..EXECS {
        assert_eq!(runtime.request("hi").policy(&FAST).send().await.unwrap().target(), Some("scripted/primary"));
    }
    let sent = commands.take();
    assert_eq!(sent.len(), 2 * EXECS, "{sent:?}");
    for pair in sent.chunks(2) {
        assert_eq!(pair, ["EVALSHA cooldown", "EVALSHA budget"], "before the call, after its answer: {sent:?}");
    }
    assert_eq!(primary.calls(), EXECS + 1);
}
