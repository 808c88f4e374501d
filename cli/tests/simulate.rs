//! `agentic simulate --json`: the real layers on virtual time (docs/design.md §4 to §8 and §18).

use crate::common;

use std::time::{Duration, Instant};

use agentic_runtime::RetryPolicy;
use common::{Run, agentic};
use serde_json::{Value, json};

fn simulate(input: Value) -> Run {
    agentic(&["simulate", "--json"], input.to_string())
}

/// Runs a simulation that must succeed as a command and returns its output object.
fn result(input: Value) -> Value {
    let run = simulate(input);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.is_empty(), "{run:?}");
    run.json()
}

/// The default jitter without randomness: pins the exact schedules.
fn exact() -> Value {
    json!({"jitter": "none"})
}

/// A failure every layer retries.
fn transient() -> Value {
    json!({"error_message": "503 Service Unavailable"})
}

fn sleeps(output: &Value) -> Vec<u64> {
    output["sleeps_ms"].as_array().expect("sleeps_ms is an array").iter().map(|ms| ms.as_u64().unwrap()).collect()
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value.as_object().expect("an object").keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

#[test]
fn defaults_with_every_call_failing_make_12_calls_and_46_5_s_of_backoff_instantly() {
    let started = Instant::now();
    let output = result(json!({"policy": exact(), "outcomes": vec![transient(); 12]}));
    assert!(started.elapsed() < Duration::from_secs(30), "the clock is virtual");
    assert_eq!(output["calls"], 12);
    assert_eq!(sleeps(&output), [2000, 4000, 8000, 1500, 2000, 4000, 8000, 3000, 2000, 4000, 8000]);
    assert_eq!(output["elapsed_ms"], 46_500);
    assert_eq!(output["outcome"], "error");
    assert_eq!(output["error_kind"], "exhausted");
    assert_eq!(
        output["error"],
        "exec() failed after 3 attempts (12 model calls):\n\
         Attempt 1: ModelError: 503 Service Unavailable\n\
         Attempt 2: ModelError: 503 Service Unavailable\n\
         Attempt 3: ModelError: 503 Service Unavailable"
    );
    assert_eq!(keys(&output), ["calls", "elapsed_ms", "error", "error_kind", "outcome", "sleeps_ms"]);
}

#[test]
fn the_output_line_follows_the_contract_field_order() {
    let run = simulate(json!({"outcomes": []}));
    assert_eq!(run.stdout, "{\"calls\":1,\"sleeps_ms\":[],\"outcome\":\"ok\",\"elapsed_ms\":0}\n");
    let run = simulate(json!({"outcomes": [{"raise": "TypeError: x"}]}));
    assert_eq!(
        run.stdout,
        "{\"calls\":1,\"sleeps_ms\":[],\"outcome\":\"error\",\"error_kind\":\"programming\",\
         \"error\":\"TypeError: x\",\"elapsed_ms\":0}\n"
    );
}

#[test]
fn two_transient_failures_then_ok() {
    let output = result(json!({"policy": exact(), "outcomes": [transient(), {"error_message": ""}, "ok"]}));
    assert_eq!(output["calls"], 3);
    assert_eq!(sleeps(&output), [2000, 4000]);
    assert_eq!(output["outcome"], "ok");
    assert_eq!(output["elapsed_ms"], 6000);
    assert_eq!(keys(&output), ["calls", "elapsed_ms", "outcome", "sleeps_ms"]);
}

#[test]
fn after_the_list_every_call_answers_ok() {
    let output = result(json!({"outcomes": [transient()]}));
    assert_eq!((output["calls"].as_u64(), output["outcome"].as_str()), (Some(2), Some("ok")));
}

#[test]
fn a_401_is_permanent_after_one_call() {
    let output = result(json!({"outcomes": [{"error_message": "Unauthorized", "status": 401}, "ok"]}));
    assert_eq!(output["calls"], 1);
    assert_eq!(sleeps(&output), Vec::<u64>::new());
    assert_eq!(output["error_kind"], "permanent");
    assert_eq!(output["error"], "exec() failed permanently:\nAttempt 1: ModelError: Unauthorized");
    assert_eq!(output["elapsed_ms"], 0);
}

#[test]
fn a_raised_type_error_is_a_programming_error_after_one_call() {
    let output = result(json!({"outcomes": [{"raise": "TypeError: bad argument"}, "ok"]}));
    assert_eq!(output["calls"], 1);
    assert_eq!(output["outcome"], "error");
    assert_eq!(output["error_kind"], "programming");
    assert_eq!(output["error"], "TypeError: bad argument");

    // Any other raised kind becomes an error message: not retried by layer 1, retried by layer 2.
    let output = result(json!({"policy": exact(), "outcomes": [{"raise": "ValueError: odd"}]}));
    assert_eq!((output["calls"].as_u64(), sleeps(&output)), (Some(2), vec![1500]));
}

#[test]
fn context_overflow_stops_after_one_call() {
    let output = result(json!({"outcomes": [{"error_message": "prompt is too long: 250000 tokens"}]}));
    assert_eq!(output["calls"], 1);
    assert_eq!(output["error_kind"], "context_overflow");
}

#[test]
fn a_hang_ends_at_the_call_timeout_and_is_retried() {
    let output = result(json!({"policy": {"jitter": "none", "timeout_ms": 1000}, "outcomes": [{"hang": true}]}));
    assert_eq!(output["calls"], 2);
    assert_eq!(sleeps(&output), [2000]);
    assert_eq!(output["elapsed_ms"], 3000);
    assert_eq!(output["outcome"], "ok");
}

#[test]
fn a_hang_under_a_budget_ends_at_the_deadline() {
    let output = result(json!({"policy": {"budget_ms": 60_000}, "outcomes": [{"hang": true}]}));
    assert_eq!(output["calls"], 1);
    assert_eq!(output["elapsed_ms"], 60_000);
    assert_eq!(output["error_kind"], "refused");
    assert!(output["error"].as_str().unwrap().contains("`budget_ms` (60000) would run out"), "{output}");
}

#[test]
fn a_hang_is_ended_by_the_default_bounds() {
    // No timeout or budget set: the first token's 300 s ends the call, and it is retried.
    let run = simulate(json!({"policy": exact(), "outcomes": [{"hang": true}]}));
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert_eq!(run.stdout, "{\"calls\":2,\"sleeps_ms\":[2000],\"outcome\":\"ok\",\"elapsed_ms\":302000}\n");

    // Calls that all hang: the model turn's 900 s ends the exec, with the retry that did not fit.
    let run = simulate(json!({"policy": exact(), "outcomes": vec![json!({"hang": true}); 12]}));
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert_eq!(
        run.json(),
        json!({
            "calls": 3,
            "sleeps_ms": [2000, 4000],
            "outcome": "error",
            "error_kind": "refused",
            "error": "exec() stopped after 1 attempt: `turn_timeout_ms` (900000) would run out: \
                      the wait of 8 s does not fit in the 0 s left:\n\
                      Attempt 1: TimeoutError: model call timed out after 294 s, \
                      at the model turn's deadline (`turn_timeout_ms` = 900000)",
            "elapsed_ms": 900_000
        })
    );
}

#[test]
fn limits_near_u64_max_answer_at_once() {
    // Every bound that could end a hang set to u64::MAX: a bound lasts at most a year, and the
    // virtual clock jumps there in one step (it used to step through its timer wheel for minutes).
    let max = u64::MAX;
    let policy = json!({
        "jitter": "none",
        "budget_ms": max,
        "turn_timeout_ms": max,
        "timeout_ms": max,
        "first_token_timeout_ms": max,
        "idle_timeout_ms": max,
    });
    let run = simulate(json!({"policy": policy, "outcomes": [{"hang": true}]}));
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert_eq!(
        run.json(),
        json!({
            "calls": 1,
            "sleeps_ms": [],
            "outcome": "error",
            "error_kind": "refused",
            "error": "exec() stopped after 1 attempt: `budget_ms` (31536000000) would run out: \
                      the wait of 2 s does not fit in the 0 s left:\n\
                      Attempt 1: TimeoutError: model call timed out after 31536000 s (`timeout_ms` = 31536000000)",
            "elapsed_ms": 31_536_000_000u64
        })
    );
}

#[test]
fn an_invalid_policy_prints_exactly_the_policy_error() {
    let run = simulate(json!({"policy": {"max_retries": 0}, "outcomes": []}));
    assert_eq!(run.code, 2);
    let expected = RetryPolicy::new().with_max_retries(0).validate().unwrap_err();
    assert_eq!(run.stderr, format!("{expected}\n"));
    assert!(run.stdout.is_empty());

    let run = simulate(json!({"policy": {"max_calls": 100}, "outcomes": []}));
    let expected = RetryPolicy::new().with_max_calls(Some(100)).validate().unwrap_err();
    assert_eq!((run.code, run.stderr), (2, format!("{expected}\n")));

    // Every broken rule, one per line, as the attribute reports them all at once.
    let run = simulate(json!({"policy": {"max_retries": 0, "session_base_delay_ms": 0}, "outcomes": []}));
    let policy = RetryPolicy::new().with_max_retries(0).with_session_base_delay_ms(0);
    let expected: String = policy.violations().iter().map(|error| format!("{error}\n")).collect();
    assert_eq!((run.code, run.stderr), (2, expected));
}

#[test]
fn retry_after_is_the_wait_on_both_layers() {
    // Layer 1: 5 s asked, 2 s computed: the server's 5 s.
    let output =
        result(json!({"policy": exact(), "outcomes": [{"error_message": "overloaded", "retry_after_ms": 5000}]}));
    assert_eq!(sleeps(&output), [5000]);
    assert_eq!(output["elapsed_ms"], 5000);
    // A shorter hint is the wait too: the server said when.
    let output =
        result(json!({"policy": exact(), "outcomes": [{"error_message": "overloaded", "retry_after_ms": 500}]}));
    assert_eq!(sleeps(&output), [500]);
    // Layer 2: layer 1 does not retry this text; layer 2 waits 5 s instead of 1.5 s.
    let output =
        result(json!({"policy": exact(), "outcomes": [{"error_message": "something odd", "retry_after_ms": 5000}]}));
    assert_eq!((output["calls"].as_u64(), sleeps(&output)), (Some(2), vec![5000]));
    // With jitter (the default), only above the wait and at most a quarter of it.
    let output = result(json!({"outcomes": [{"error_message": "overloaded", "retry_after_ms": 5000}]}));
    assert!((5000..=6250).contains(&sleeps(&output)[0]), "{output}");
}

#[test]
fn retry_after_above_the_cap_stops_with_budget() {
    let output = result(json!({"outcomes": [{"error_message": "overloaded", "retry_after_ms": 120_000}]}));
    assert_eq!(output["calls"], 1);
    assert_eq!(output["error_kind"], "refused");
    assert!(output["error"].as_str().unwrap().contains("server asked to wait 120 s; cap is 60 s"), "{output}");

    let output = result(json!({
        "policy": {"retry_after_cap_ms": 3000},
        "outcomes": [{"error_message": "overloaded", "retry_after_ms": 5000}]
    }));
    assert_eq!((output["calls"].as_u64(), output["error_kind"].as_str()), (Some(1), Some("refused")));
}

#[test]
fn max_calls_caps_both_layers() {
    let output = result(json!({"policy": {"jitter": "none", "max_calls": 5}, "outcomes": vec![transient(); 12]}));
    assert_eq!(output["calls"], 5);
    assert_eq!(sleeps(&output), [2000, 4000, 8000, 1500]);
    assert_eq!(output["error_kind"], "refused");
    assert!(output["error"].as_str().unwrap().contains("`max_calls` (5)"), "{output}");
}

#[test]
fn latency_is_virtual_time_too() {
    let output = result(json!({"outcomes": [{"latency_ms": 300}]}));
    assert_eq!((output["calls"].as_u64(), output["elapsed_ms"].as_u64()), (Some(1), Some(300)));
    let output = result(json!({"policy": exact(), "outcomes": [{"error_message": "overloaded", "latency_ms": 700}]}));
    assert_eq!(output["elapsed_ms"], 2700);
}

#[test]
fn seeded_jitter_replays_exactly() {
    let input = json!({"policy": {"jitter": "full", "seed": 7}, "outcomes": vec![transient(); 5]});
    let first = result(input.clone());
    assert_eq!(first, result(input));
    let jittered = sleeps(&first);
    assert_eq!(jittered.len(), 5);
    assert_ne!(jittered, [2000, 4000, 8000, 1500, 2000]);
    let nominal = [2000, 4000, 8000, 1500, 2000];
    assert!(jittered.iter().zip(nominal).all(|(delay, cap)| *delay <= cap), "{jittered:?}");
}

#[test]
fn bad_input_names_the_field_and_exits_2() {
    let cases = [
        (json!({"policy": {"max_retry": 3}, "outcomes": []}), "did you mean \"policy.max_retries\"?"),
        (json!({"policy": {"max_retries": "3"}, "outcomes": []}), "\"policy.max_retries\" must be a whole number"),
        (json!({"policy": {"max_retries": -1}, "outcomes": []}), "found -1"),
        (json!({"policy": {"jitter": "ful"}, "outcomes": []}), "did you mean \"full\"?"),
        (json!({"policy": [], "outcomes": []}), "\"policy\" must be a JSON object, found an array"),
        (json!({"outcome": []}), "did you mean \"outcomes\"?"),
        (json!({"policy": {}}), "missing field \"outcomes\""),
        (json!({"outcomes": {}}), "\"outcomes\" must be an array, found an object"),
        (json!({"outcomes": ["ok", "okay"]}), "\"outcomes[1]\" must be one of"),
        (json!({"outcomes": [3]}), "found 3"),
        (json!({"outcomes": [{"eror_message": "x"}]}), "did you mean \"outcomes[0].error_message\"?"),
        (json!({"outcomes": [{"error_message": "x", "raise": "y"}]}), "has both"),
        (json!({"outcomes": [{"hang": false}]}), "\"outcomes[0].hang\" must be true"),
        (json!({"outcomes": [{"status": 500}]}), "add \"error_message\" or \"raise\""),
        (
            json!({"outcomes": [{"error_message": "x", "status": 99}]}),
            "\"outcomes[0].status\" must be a whole number from 100 to 599",
        ),
        (json!({"outcomes": [{"error_message": "x", "retry_after_ms": 1.5}]}), "\"outcomes[0].retry_after_ms\""),
    ];
    for (input, expected) in cases {
        let run = simulate(input.clone());
        assert_eq!(run.code, 2, "{input}: {run:?}");
        assert!(run.stdout.is_empty(), "{input}: {run:?}");
        assert!(run.stderr.starts_with("error: "), "{input}: {}", run.stderr);
        assert!(run.stderr.contains(expected), "{input}: {} lacks {expected:?}", run.stderr);
    }
    let run = agentic(&["simulate", "--json"], "{\"outcomes\": [");
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("stdin is not valid JSON"), "{}", run.stderr);
}

#[test]
fn without_json_the_run_is_reported_for_people() {
    let run = agentic(&["simulate"], json!({"policy": exact(), "outcomes": vec![transient(); 12]}).to_string());
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "policy: up to 12 model calls and 46.5 s of backoff per exec; a model turn ends within 15 min"
    );
    assert_eq!(lines.len(), 1 + 15 + 1 + 4, "{}", run.stdout);
    assert!(lines[1].contains("session attempt 1 call 1") && lines[1].ends_with("sleeping 2000 ms"), "{}", lines[1]);
    assert!(run.stdout.contains("outcome: error (exhausted) after 12 model calls"), "{}", run.stdout);
    assert!(run.stdout.contains("46.5 s elapsed"), "{}", run.stdout);

    // The default policy jitters each delay by up to a quarter either way.
    let run = agentic(&["simulate"], json!({"outcomes": ["ok"]}).to_string());
    assert_eq!(
        run.stdout.lines().next(),
        Some("policy: up to 12 model calls and 46.5 s ± 25 % of backoff per exec; a model turn ends within 15 min")
    );
}

#[test]
fn help_states_the_contract() {
    let help = agentic(&["simulate", "--help"], "");
    assert_eq!(help.code, 0);
    for part in
        ["\"outcomes\"", "{\"hang\": true}", "retry_after_ms", "\"sleeps_ms\": [int..]", "the policy's bounds end it"]
    {
        assert!(help.stdout.contains(part), "help lacks {part:?}:\n{}", help.stdout);
    }
}

/// docs/design.md §5, rule 2: layer 2 stops on context overflow as §4 defines it, which
/// includes a bodiless 400/413, which layer 2 sees as `"ModelError: 400 (no body)"`.
#[test]
fn a_bodiless_400_is_a_context_overflow_for_layer_2_too() {
    let output = result(json!({"outcomes": [{"error_message": "400 (no body)"}]}));
    assert_eq!(output["calls"], 1);
    assert_eq!(output["error_kind"], "context_overflow");
}
