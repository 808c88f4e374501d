//! Rate limits (`Scenario::with_rate_limit`, `"rate_limit"`): per key, token buckets for requests,
//! tokens, input and output tokens refill continuously on the scenario's clock; a request that does
//! not fit gets a 429 in its wire's rate-limit body with `retry-after` the wait, consumes no step
//! and is charged nothing; every answer carries its wire's rate-limit headers (OpenAI's on the
//! Chat Completions and Responses wires, Anthropic's on Messages, none on Gemini).
//!
//! The clock is tokio's: every test runs on paused time and moves it with `tokio::time::advance`.
//! The raw client sets no timer and no step here pauses, so nothing else moves the clock and every
//! refill is exact.

use crate::common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentic_chaos::{ChaosServer, Outage, RateLimit, Scenario, Step, TokenUsage};
use common::{Client, Response, WireFormat};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// The header a wire carries its API key in, with `key`.
fn key_header(wire: WireFormat, key: &str) -> (&'static str, String) {
    match wire {
        WireFormat::Anthropic => ("x-api-key", key.to_owned()),
        WireFormat::Gemini => ("x-goog-api-key", key.to_owned()),
        _ => ("authorization", format!("Bearer {key}")),
    }
}

/// One model request on a new connection, in `wire`'s format, with `headers`.
async fn ask_with(server: &ChaosServer, wire: WireFormat, headers: &[(&str, &str)]) -> Response {
    let mut client = Client::connect(server.addr()).await;
    client.send_model(wire, false, headers).await;
    client.read_response().await.response()
}

/// One model request with the API key `key`.
async fn ask(server: &ChaosServer, wire: WireFormat, key: &str) -> Response {
    let (name, value) = key_header(wire, key);
    ask_with(server, wire, &[("content-type", "application/json"), (name, &value)]).await
}

/// Every request costs 10 input and 5 output tokens.
fn costing(limit: RateLimit) -> Scenario {
    Scenario::new().otherwise(Step::ok("Fine.").usage(TokenUsage::new(10, 5))).with_rate_limit(limit)
}

#[track_caller]
fn header<'a>(response: &'a Response, name: &str) -> &'a str {
    response.header(name).unwrap_or_else(|| panic!("no `{name}` in {:?}", response.headers))
}

/// A Go duration ("0s", "500ms", "1.5s", "1m0.5s", "1h2m3s") read back.
fn go_duration(text: &str) -> Duration {
    if text == "0s" {
        return Duration::ZERO;
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !c.is_ascii_digit() && c != '.').expect("a unit");
        let (number, after) = rest.split_at(number_len);
        let unit_len = after.find(|c: char| c.is_ascii_digit()).unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let scale = match unit {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            _ => panic!("unit {unit:?} in {text:?}"),
        };
        total += Duration::from_secs_f64(number.parse::<f64>().expect("a number") * scale);
        rest = after;
    }
    // f64 seconds: back to whole milliseconds, the precision the server writes.
    Duration::from_millis((total.as_secs_f64() * 1000.0).round() as u64)
}

/// An RFC 3339 instant in UTC with milliseconds (`2026-12-01T18:55:00.500Z`) read back.
fn instant(text: &str) -> SystemTime {
    let n = |range: std::ops::Range<usize>| text[range].parse::<i64>().unwrap_or_else(|_| panic!("{text:?}"));
    assert_eq!(
        (text.len(), &text[4..5], &text[10..11], &text[19..20], &text[23..]),
        (24, "-", "T", ".", "Z"),
        "{text}"
    );
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let ms = ((days * 24 + n(11..13)) * 60 + n(14..16)) * 60_000 + n(17..19) * 1000 + n(20..23);
    UNIX_EPOCH + Duration::from_millis(ms as u64)
}

#[test]
fn the_test_readers_read_what_they_should() {
    assert_eq!(go_duration("1m0.5s"), Duration::from_millis(60_500));
    assert_eq!(go_duration("1h2m3s"), secs(3723));
    assert_eq!(go_duration("500ms"), Duration::from_millis(500));
    assert_eq!(instant("1970-01-02T00:00:01.250Z"), UNIX_EPOCH + Duration::from_millis(86_401_250));
    assert_eq!(instant("2000-03-01T00:00:00.000Z"), UNIX_EPOCH + secs(951_868_800));
}

#[tokio::test(start_paused = true)]
async fn openai_wires_send_the_x_ratelimit_headers_on_answers_and_on_the_429() {
    for wire in [WireFormat::OpenAi, WireFormat::Responses] {
        let server = ChaosServer::start(costing(RateLimit::new().requests(2).tokens(100))).await.unwrap();
        let first = ask(&server, wire, "sk-one").await;
        assert_eq!(first.status, 200, "{wire:?}");
        assert_eq!(header(&first, "x-ratelimit-limit-requests"), "2");
        assert_eq!(header(&first, "x-ratelimit-remaining-requests"), "1");
        // 1 of 2 per minute used: full again in 30 s.
        assert_eq!(go_duration(header(&first, "x-ratelimit-reset-requests")), secs(30));
        assert_eq!(header(&first, "x-ratelimit-reset-requests"), "30s");
        assert_eq!(header(&first, "x-ratelimit-limit-tokens"), "100");
        assert_eq!(header(&first, "x-ratelimit-remaining-tokens"), "85");
        // 15 of 100 per minute used: 9 s.
        assert_eq!(header(&first, "x-ratelimit-reset-tokens"), "9s");
        for absent in ["anthropic-ratelimit-requests-limit", "retry-after", "retry-after-ms"] {
            assert_eq!(first.header(absent), None, "{wire:?} {absent}");
        }

        tokio::time::advance(Duration::from_millis(500)).await;
        let second = ask(&server, wire, "sk-one").await;
        assert_eq!(second.status, 200);
        assert_eq!(header(&second, "x-ratelimit-remaining-requests"), "0");
        // 0.5 s refilled 1/60 of a request: 2 - 1/60 missing at 2/60 a second, 59.5 s.
        assert_eq!(header(&second, "x-ratelimit-reset-requests"), "59.5s");
        assert_eq!(header(&second, "x-ratelimit-remaining-tokens"), "70");
        // 30 - 0.8333 missing at 100/60 per second: 17.5 s.
        assert_eq!(go_duration(header(&second, "x-ratelimit-reset-tokens")), Duration::from_millis(17_500));

        let refused = ask(&server, wire, "sk-one").await;
        assert_eq!(refused.status, 429, "{wire:?}");
        let body = refused.json();
        assert_eq!(body["error"]["type"], "rate_limit_exceeded", "{body}");
        assert_eq!(body["error"]["code"], "rate_limit_exceeded", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("Rate limit reached for requests"), "{message}");
        // 1 request missing but 1/60 of one: (1 - 1/60) * 30 s = 29.5 s.
        assert_eq!(header(&refused, "retry-after-ms"), "29500");
        assert_eq!(header(&refused, "retry-after"), "30");
        // The 429 took nothing: the same levels as after the second answer.
        assert_eq!(header(&refused, "x-ratelimit-remaining-requests"), "0");
        assert_eq!(header(&refused, "x-ratelimit-remaining-tokens"), "70");
        assert_eq!(go_duration(header(&refused, "x-ratelimit-reset-requests")), Duration::from_millis(59_500));
    }
}

#[tokio::test(start_paused = true)]
async fn anthropic_sends_its_four_trios_with_instants() {
    let limit = RateLimit::new().requests(2).tokens(100).input_tokens(50).output_tokens(20);
    let server = ChaosServer::start(costing(limit)).await.unwrap();
    let before = SystemTime::now();
    let first = ask(&server, WireFormat::Anthropic, "sk-ant").await;
    let after = SystemTime::now();
    assert_eq!(first.status, 200);
    // (limit, remaining after 10 in / 5 out, time until full)
    let expected = [
        ("requests", "2", "1", secs(30)),
        ("tokens", "100", "85", secs(9)),
        ("input-tokens", "50", "40", secs(12)),
        ("output-tokens", "20", "15", secs(15)),
    ];
    for (name, limit, remaining, until_full) in expected {
        let h = |field: &str| header(&first, &format!("anthropic-ratelimit-{name}-{field}")).to_owned();
        assert_eq!((h("limit").as_str(), h("remaining").as_str()), (limit, remaining), "{name}");
        let reset = instant(&h("reset"));
        let floor = (before + until_full).duration_since(UNIX_EPOCH).unwrap().as_millis();
        let ceiling = (after + until_full).duration_since(UNIX_EPOCH).unwrap().as_millis() + 1;
        let at = reset.duration_since(UNIX_EPOCH).unwrap().as_millis();
        assert!(floor <= at && at <= ceiling, "{name}: {} not within [{floor}, {ceiling}] ms", h("reset"));
    }
    assert_eq!(first.header("x-ratelimit-limit-requests"), None);

    ask(&server, WireFormat::Anthropic, "sk-ant").await;
    let refused = ask(&server, WireFormat::Anthropic, "sk-ant").await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.json()["error"]["type"], "rate_limit_error");
    assert_eq!(refused.json()["type"], "error");
    assert_eq!(header(&refused, "retry-after"), "30");
    assert_eq!(refused.header("retry-after-ms"), None, "Anthropic sends no retry-after-ms");
    assert_eq!(header(&refused, "anthropic-ratelimit-requests-remaining"), "0");

    // Only the configured limits get headers.
    let server = ChaosServer::start(costing(RateLimit::new().requests(5))).await.unwrap();
    let answer = ask(&server, WireFormat::Anthropic, "sk-ant").await;
    assert_eq!(header(&answer, "anthropic-ratelimit-requests-remaining"), "4");
    for absent in ["tokens", "input-tokens", "output-tokens"] {
        assert_eq!(answer.header(&format!("anthropic-ratelimit-{absent}-limit")), None, "{absent}");
    }
}

#[tokio::test(start_paused = true)]
async fn gemini_sends_no_headers_but_is_limited_all_the_same() {
    let server = ChaosServer::start(costing(RateLimit::new().requests(1))).await.unwrap();
    let first = ask(&server, WireFormat::Gemini, "AIza-one").await;
    assert_eq!(first.status, 200);
    let refused = ask(&server, WireFormat::Gemini, "AIza-one").await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.json()["error"]["status"], "RESOURCE_EXHAUSTED");
    assert_eq!(header(&refused, "retry-after"), "60");
    for response in [&first, &refused] {
        let named = response.headers.iter().find(|(n, _)| n.contains("ratelimit"));
        assert_eq!(named, None, "Google sends no rate-limit headers");
    }
}

#[tokio::test(start_paused = true)]
async fn n_requests_pass_the_next_waits_exactly_retry_after_and_the_refill_is_continuous() {
    let server = ChaosServer::start(costing(RateLimit::new().requests(10))).await.unwrap();
    for i in 0..10 {
        assert_eq!(ask(&server, WireFormat::OpenAi, "sk").await.status, 200, "request {i}");
    }
    let refused = ask(&server, WireFormat::OpenAi, "sk").await;
    assert_eq!(refused.status, 429);
    // 1 request of 10 per minute: 6 s.
    assert_eq!(header(&refused, "retry-after"), "6");
    assert_eq!(header(&refused, "retry-after-ms"), "6000");

    tokio::time::advance(Duration::from_millis(5_999)).await;
    let early = ask(&server, WireFormat::OpenAi, "sk").await;
    assert_eq!(early.status, 429, "a millisecond early");
    assert_eq!(header(&early, "retry-after-ms"), "1");
    assert_eq!(header(&early, "retry-after"), "1", "whole seconds, rounded up");
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(ask(&server, WireFormat::OpenAi, "sk").await.status, 200, "after the wait it passes");

    // Half the window refills half the limit: 5 pass, the sixth waits.
    tokio::time::advance(secs(30)).await;
    for i in 0..5 {
        let answer = ask(&server, WireFormat::OpenAi, "sk").await;
        assert_eq!(answer.status, 200, "request {i} after half a minute");
        assert_eq!(header(&answer, "x-ratelimit-remaining-requests"), (4 - i).to_string());
    }
    assert_eq!(ask(&server, WireFormat::OpenAi, "sk").await.status, 429);
}

#[tokio::test(start_paused = true)]
async fn a_tokens_limit_refuses_before_the_requests_limit_does() {
    // 20 tokens a request against 50 a minute: the third request finds 10.
    let scenario = Scenario::new()
        .otherwise(Step::ok("Fine.").usage(TokenUsage::new(10, 10)))
        .with_rate_limit(RateLimit::new().requests(100).tokens(50));
    let server = ChaosServer::start(scenario).await.unwrap();
    for _ in 0..2 {
        assert_eq!(ask(&server, WireFormat::OpenAi, "sk").await.status, 200);
    }
    let refused = ask(&server, WireFormat::OpenAi, "sk").await;
    assert_eq!(refused.status, 429);
    let message = refused.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.starts_with("Rate limit reached for tokens"), "{message}");
    assert!(message.contains("Limit 50, Remaining 10, Requested 20"), "{message}");
    // 10 tokens missing at 50 a minute: 12 s.
    assert_eq!(header(&refused, "retry-after"), "12");
    assert_eq!(header(&refused, "x-ratelimit-remaining-requests"), "98");
    assert_eq!(header(&refused, "x-ratelimit-remaining-tokens"), "10");
}

#[tokio::test(start_paused = true)]
async fn input_and_output_limits_count_their_own_tokens() {
    let limit = RateLimit::new().input_tokens(25).output_tokens(1_000).tokens(10_000);
    let server = ChaosServer::start(
        Scenario::new().otherwise(Step::ok("Fine.").usage(TokenUsage::new(10, 100))).with_rate_limit(limit),
    )
    .await
    .unwrap();
    let first = ask(&server, WireFormat::Anthropic, "sk").await;
    assert_eq!(header(&first, "anthropic-ratelimit-input-tokens-remaining"), "15");
    assert_eq!(header(&first, "anthropic-ratelimit-output-tokens-remaining"), "900");
    assert_eq!(header(&first, "anthropic-ratelimit-tokens-remaining"), "9890", "tokens counts both");
    assert_eq!(ask(&server, WireFormat::Anthropic, "sk").await.status, 200);
    let refused = ask(&server, WireFormat::Anthropic, "sk").await;
    assert_eq!(refused.status, 429);
    let message = refused.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("input tokens"), "{message}");

    // Without pinned usage, the input is the prompt's words by the rule ("hi": 1) and the output
    // the answer's chunks ("one two three": 3).
    let server = ChaosServer::start(
        Scenario::new().otherwise(Step::ok("one two three")).with_rate_limit(RateLimit::new().tokens(100)),
    )
    .await
    .unwrap();
    let answer = ask(&server, WireFormat::OpenAi, "sk").await;
    assert_eq!(header(&answer, "x-ratelimit-remaining-tokens"), "96");
}

#[tokio::test(start_paused = true)]
async fn each_key_has_its_own_buckets_and_the_journal_never_holds_one() {
    let server = ChaosServer::start(costing(RateLimit::new().requests(1))).await.unwrap();
    for wire in WireFormat::ALL {
        let key = format!("sk-secret-{}", wire.name());
        assert_eq!(ask(&server, wire, &key).await.status, 200, "{wire:?}");
        assert_eq!(ask(&server, wire, &key).await.status, 429, "{wire:?}");
    }
    // Gemini's `key` query parameter is a key too.
    let mut client = Client::connect(server.addr()).await;
    let path = format!("{}?key=AIza-secret-query", WireFormat::Gemini.request_path("m", false));
    let by_query = client.request("POST", &path, &[], &common::body(false)).await.response();
    assert_eq!(by_query.status, 200, "a new key by its query parameter");
    // No key at all is one anonymous key.
    let anonymous = ask_with(&server, WireFormat::OpenAi, &[]).await;
    assert_eq!(anonymous.status, 200);
    assert_eq!(ask_with(&server, WireFormat::OpenAi, &[]).await.status, 429);

    let journal = server.journal();
    let limited: Vec<bool> = journal.iter().map(|e| e.rate_limited).collect();
    assert_eq!(limited, [false, true, false, true, false, true, false, true, false, false, true]);
    let text = serde_json::to_string(&journal).unwrap();
    assert!(!text.contains("secret"), "a key in the journal: {text}");
    assert!(!format!("{server:?}").contains("secret"), "a key in the server's Debug");
}

#[tokio::test(start_paused = true)]
async fn the_429_consumes_no_step_and_a_reset_refills_every_bucket() {
    let scenario =
        Scenario::new().then(Step::ok("One.")).then(Step::ok("Two.")).with_rate_limit(RateLimit::new().requests(1));
    let server = ChaosServer::start(scenario).await.unwrap();
    let one = ask(&server, WireFormat::OpenAi, "sk").await;
    assert_eq!(common::whole_text(WireFormat::OpenAi, &one.json()), "One.");
    assert_eq!(ask(&server, WireFormat::OpenAi, "sk").await.status, 429);
    tokio::time::advance(secs(60)).await;
    let two = ask(&server, WireFormat::OpenAi, "sk").await;
    assert_eq!(common::whole_text(WireFormat::OpenAi, &two.json()), "Two.", "the 429 took no step");

    let journal = server.journal();
    let refused = journal[1].step.unwrap();
    assert!(journal[1].rate_limited && refused.is_rate_limited());
    assert_eq!((refused.index, refused.repeat), (None, 0));
    assert!(!refused.is_default() && !refused.is_context_window() && !refused.is_outage());
    assert_eq!(journal[2].step.unwrap().index, Some(1));
    let json = serde_json::to_value(&journal).unwrap();
    assert_eq!(json[1]["step"]["rate_limited"], true);
    assert_eq!(json[2]["step"].get("rate_limited"), None, "absent when false");

    assert_eq!(ask(&server, WireFormat::OpenAi, "sk").await.status, 429);
    server.reset();
    let again = ask(&server, WireFormat::OpenAi, "sk").await;
    assert_eq!(common::whole_text(WireFormat::OpenAi, &again.json()), "One.", "the reset refilled the bucket");
}

#[tokio::test(start_paused = true)]
async fn errors_outages_and_overflows_carry_the_headers_and_what_is_charged() {
    let scenario = Scenario::new()
        .then(Step::http_error(503))
        .with_outage(Outage::new(secs(10), secs(20)))
        .with_context_window(1)
        .with_rate_limit(RateLimit::new().requests(5).output_tokens(100));
    let server = ChaosServer::start(scenario).await.unwrap();
    // The body's conversation ("hi") is larger than 1 byte: the overflow answer, charged 1
    // request and no output.
    let overflow = ask(&server, WireFormat::OpenAi, "sk").await;
    assert_eq!(overflow.status, 400);
    assert_eq!(header(&overflow, "x-ratelimit-remaining-requests"), "4");
    // A server that is down charges nothing but still reports the levels.
    tokio::time::advance(secs(10)).await;
    let down = ask(&server, WireFormat::Anthropic, "sk").await;
    assert_eq!(down.status, 503);
    // 1 request of 5 a minute refilled in 10 s: 4.83, floored.
    assert_eq!(header(&down, "anthropic-ratelimit-requests-remaining"), "4");
    assert_eq!(header(&down, "anthropic-ratelimit-output-tokens-remaining"), "100");
    assert!(server.journal()[1].outage);

    // A request larger than the bucket can never pass: a 429 without a wait.
    let scenario = costing(RateLimit::new().tokens(10));
    let server = ChaosServer::start(scenario).await.unwrap();
    let too_large = ask(&server, WireFormat::OpenAi, "sk").await;
    assert_eq!(too_large.status, 429);
    assert_eq!((too_large.header("retry-after"), too_large.header("retry-after-ms")), (None, None));
    let message = too_large.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.starts_with("Request too large for tokens"), "{message}");
    assert_eq!(header(&too_large, "x-ratelimit-remaining-tokens"), "10");
}

#[tokio::test(start_paused = true)]
async fn a_real_client_reads_the_headers_and_waits_the_429s_retry_after() {
    // reqwest over hyper, with a timer of its own (a 30 s timeout): on paused time the clock
    // moves only when the test advances it (see tests/outage.rs), which `at_ms` shows.
    let client = agentic_test_support::http::client_builder().timeout(secs(30)).build().unwrap();
    for wire in WireFormat::ALL {
        let server = ChaosServer::start(costing(RateLimit::new().requests(2).window(secs(10)))).await.unwrap();
        let url = format!("http://{}{}", server.addr(), wire.request_path("test-model", false));
        let (key, value) = key_header(wire, "sk-real");
        let send = || client.post(&url).header(key, &value).header("content-type", "application/json");
        let mut statuses = Vec::new();
        let mut remaining = Vec::new();
        for _ in 0..3 {
            let response = send().body(common::body(false)).send().await.unwrap();
            statuses.push(response.status().as_u16());
            let headers = response.headers();
            let left =
                headers.get("x-ratelimit-remaining-requests").or(headers.get("anthropic-ratelimit-requests-remaining"));
            remaining.push(left.map(|v| v.to_str().unwrap().to_owned()));
            if response.status() == 429 {
                let wait: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
                assert_eq!(wait, 5, "{wire:?}: 1 request of 2 per 10 s");
                tokio::time::advance(secs(wait)).await;
            }
        }
        let expected: [Option<&str>; 3] = match wire {
            WireFormat::Gemini => [None; 3],
            _ => [Some("1"), Some("0"), Some("0")],
        };
        assert_eq!(statuses, [200, 200, 429], "{wire:?}");
        assert_eq!(remaining.iter().map(Option::as_deref).collect::<Vec<_>>(), expected, "{wire:?}");
        let after = send().body(common::body(false)).send().await.unwrap();
        assert_eq!(after.status(), 200, "{wire:?}: after retry-after it passes");
        let at: Vec<u64> = server.journal().iter().map(|e| e.at_ms).collect();
        assert_eq!(at, [0, 0, 0, 5_000], "{wire:?}");
    }
}

#[test]
fn a_scenario_file_reads_and_writes_its_rate_limit() {
    let json = r#"{"rate_limit": {"requests": 120, "tokens": 40000, "input_tokens": 30000,
        "output_tokens": 8000, "window_ms": 1000}}"#;
    let scenario = Scenario::from_json_str(json).unwrap();
    let limit = scenario.rate_limit().unwrap();
    let read = (limit.max_requests(), limit.max_tokens(), limit.max_input_tokens(), limit.max_output_tokens());
    assert_eq!(read, (Some(120), Some(40_000), Some(30_000), Some(8_000)));
    assert_eq!(limit.window_length(), secs(1));
    assert_eq!(Scenario::from_json_str(&scenario.to_json()).unwrap(), scenario, "round trip");

    let minute = Scenario::from_json_str(r#"{"rate_limit": {"requests": 3}}"#).unwrap();
    assert_eq!(minute.rate_limit(), Some(&RateLimit::new().requests(3)));
    assert_eq!(minute.rate_limit().unwrap().window_length(), secs(60), "a minute by default");
    assert!(!minute.to_json().contains("window_ms"), "the default window is not written");
    assert_eq!(Scenario::new().rate_limit(), None);
}

#[test]
fn a_bad_rate_limit_in_a_file_names_its_field() {
    let cases = [
        (r#"{"requests": 0}"#, "rate_limit.requests", "at least 1"),
        (r#"{"output_tokens": 0}"#, "rate_limit.output_tokens", "at least 1"),
        (r#"{"rpm": 3}"#, "rate_limit.rpm", "unknown field"),
        (r#"{}"#, "rate_limit", "at least one of"),
        (r#"{"requests": 1, "window_ms": 0}"#, "rate_limit.window_ms", "from 1 to 86400000"),
        (r#"{"requests": 1, "window_ms": 86400001}"#, "rate_limit.window_ms", "from 1 to 86400000"),
        (r#"{"requests": -1}"#, "rate_limit.requests", "invalid value"),
    ];
    for (limit, field, words) in cases {
        let err = Scenario::from_json_str(&format!(r#"{{"rate_limit": {limit}}}"#)).unwrap_err();
        assert_eq!(err.field(), Some(field), "{limit}: {err}");
        assert!(err.to_string().contains(words), "{limit}: {err}");
    }
}

#[test]
#[should_panic(expected = "must be at least 1")]
fn a_zero_limit_is_refused_in_rust_too() {
    let _ = RateLimit::new().tokens(0);
}

#[test]
#[should_panic(expected = "from 1 ms to a day")]
fn a_window_over_a_day_is_refused_in_rust_too() {
    let _ = RateLimit::new().requests(1).window(secs(86_401));
}
