//! `agentic classify`: the JSON contract of docs/design.md §18, the plain output, malformed input.

use crate::common;

use common::agentic;
use serde_json::{Value, json};

/// Classifies one `--json` input line and returns the output object.
fn classify(line: Value) -> Value {
    let run = agentic(&["classify", "--json"], format!("{line}\n"));
    assert_eq!(run.code, 0, "{run:?}");
    run.json()
}

/// `(retryable, session reason, exec action, exec reason)` of one output object.
fn verdicts(output: &Value) -> (bool, &str, &str, &str) {
    (
        output["session"]["retryable"].as_bool().expect("retryable is a boolean"),
        output["session"]["reason"].as_str().expect("the session reason is a string"),
        output["exec"]["action"].as_str().expect("action is a string"),
        output["exec"]["reason"].as_str().expect("the exec reason is a string"),
    )
}

fn message(text: &str) -> (bool, String, String, String) {
    let output = classify(json!({ "error_message": text }));
    let (retryable, session, action, exec) = verdicts(&output);
    (retryable, session.to_owned(), action.to_owned(), exec.to_owned())
}

/// The keys of an object, sorted.
fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value.as_object().expect("an object").keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

#[test]
fn json_output_has_exactly_the_contract_fields_in_order() {
    let run = agentic(&["classify", "--json"], "{\"error_message\": \"Too Many Requests\", \"status\": 429}\n");
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stdout,
        "{\"session\":{\"retryable\":true,\"reason\":\"HTTP 429 is transient\"},\
         \"exec\":{\"action\":\"retry\",\"reason\":\"no permanent marker, status or code\"}}\n"
    );
    let output = run.json();
    assert_eq!(keys(&output), ["exec", "session"]);
    assert_eq!(keys(&output["session"]), ["reason", "retryable"]);
    assert_eq!(keys(&output["exec"]), ["action", "reason"]);
    assert!(run.stderr.is_empty());
}

#[test]
fn every_exec_action_is_reachable() {
    let cases = [
        ("overloaded", "retry"),
        ("AuthenticationError: invalid api key", "fail_permanently"),
        ("TypeError: missing argument", "raise"),
        ("NotImplementedError", "raise"),
        ("prompt is too long: 250000 tokens > 200000 maximum", "context_overflow"),
    ];
    for (text, expected) in cases {
        assert_eq!(message(text).2, expected, "{text}");
    }
}

#[test]
fn the_three_reference_bugs_are_fixed() {
    let (retryable, session, action, exec) = message("prompt is too long: 250000 tokens");
    assert!(!retryable, "250000 contains 500 but is a context overflow");
    assert_eq!(session, "context overflow: matched \"prompt is too long\"");
    assert_eq!(
        (action.as_str(), exec.as_str()),
        ("context_overflow", "context overflow: matched \"prompt is too long\"")
    );

    let (retryable, session, action, _) = message("maximum context length is 4290 tokens");
    assert!(!retryable, "4290 contains 429 but is a context overflow");
    assert_eq!(session, "context overflow: matched \"maximum context length is \\d+ tokens\"");
    assert_eq!(action, "context_overflow");

    let (retryable, session, action, exec) = message("429 Too Many Requests: insufficient credits");
    assert!(!retryable, "out of credits is not a rate limit");
    assert_eq!(session, "quota exhausted: matched \"insufficient credits\"");
    assert_eq!(
        (action.as_str(), exec.as_str()),
        ("fail_permanently", "quota exhausted: matched \"insufficient credits\"")
    );

    // A quota text that asks to retry after a stated time is a per-minute rate limit.
    let (retryable, _, action, _) = message("You exceeded your current quota, please retry in 20s");
    assert!(retryable);
    assert_eq!(action, "retry");
}

#[test]
fn status_numbers_inside_other_numbers_match_nothing() {
    for text in ["took 15000 ms", "used 4290 tokens", "scored 2.5000", "id 5029"] {
        let (retryable, session, _, _) = message(text);
        assert!(!retryable, "{text}");
        assert_eq!(session, "matched no retry pattern", "{text}");
    }
    let (retryable, session, _, _) = message("upstream returned 503");
    assert!(retryable);
    assert_eq!(session, "matched retry pattern \"503\"");
}

#[test]
fn stop_reason_defaults_to_error_and_other_reasons_are_not_retried() {
    let default = classify(json!({"error_message": "overloaded"}));
    let explicit = classify(json!({"error_message": "overloaded", "stop_reason": "error"}));
    assert_eq!(default, explicit);
    assert!(verdicts(&default).0);
    for stop_reason in ["stop", "tool_use", "length", "aborted"] {
        let output = classify(json!({"error_message": "overloaded", "stop_reason": stop_reason}));
        let (retryable, reason, _, _) = verdicts(&output);
        assert!(!retryable, "{stop_reason}");
        assert_eq!(reason, format!("stop_reason is \"{stop_reason}\", not \"error\""));
    }
}

#[test]
fn a_status_makes_a_typed_error_and_the_text_stays_as_given() {
    // The text names no status; the typed one decides.
    let output = classify(json!({"error_message": "upstream said no", "status": 503}));
    assert_eq!(verdicts(&output), (true, "HTTP 503 is transient", "retry", "no permanent marker, status or code"));
    let output = classify(json!({"error_message": "bad request", "status": 400}));
    let permanent = "HTTP 400 is permanent (a 4xx other than 408, 409, 425, 429)";
    assert_eq!(verdicts(&output), (false, permanent, "fail_permanently", permanent));
    // Without a status the same text matches no pattern.
    assert_eq!(message("upstream said no").1, "matched no retry pattern");
    // A rate limit's status outranks an overflow pattern (Bedrock's 429 "Too many tokens"); a
    // permanent status does not.
    let output = classify(json!({"error_message": "prompt is too long", "status": 429}));
    assert_eq!(verdicts(&output).2, "retry");
    let output = classify(json!({"error_message": "prompt is too long", "status": 400}));
    assert_eq!(verdicts(&output).2, "context_overflow");
    // null is the same as leaving a field out.
    let output = classify(json!({"error_message": "overloaded", "status": null, "stop_reason": null}));
    assert_eq!(verdicts(&output).1, "matched retry pattern \"overloaded\"");
}

#[test]
fn typed_should_retry_and_code_extensions() {
    let output = classify(json!({"error_message": "overloaded", "should_retry": false}));
    assert_eq!(
        verdicts(&output),
        (false, "server sent x-should-retry: false", "fail_permanently", "server sent x-should-retry: false")
    );
    let output = classify(json!({"error_message": "slow down", "code": "insufficient_quota"}));
    assert_eq!(verdicts(&output).1, "quota exhausted: provider code \"insufficient_quota\"");
    let output = classify(json!({"error_message": "too big", "code": "context_length_exceeded"}));
    assert_eq!(verdicts(&output).2, "context_overflow");
}

#[test]
fn malformed_lines_are_reported_with_their_number_and_the_rest_go_on() {
    let input = [
        r#"{"error_message": "overloaded"}"#,
        "",
        "   ",
        "{not json",
        "[1, 2]",
        r#"{"stop_reason": "error"}"#,
        r#"{"error_message": 42}"#,
        r#"{"error_message": "x", "stop_reason": "finished"}"#,
        r#"{"error_message": "x", "status": 1000}"#,
        r#"{"error_message": "x", "status": "429"}"#,
        r#"{"error_message": "x", "stop_reson": "stop"}"#,
        r#"{"error_message": "503"}"#,
    ]
    .join("\n");
    let run = agentic(&["classify", "--json"], input);
    assert_eq!(run.code, 1, "{run:?}");
    let lines = run.json_lines();
    let errors: Vec<&str> = lines.iter().filter_map(|line| line["error"].as_str()).collect();
    assert_eq!(
        errors,
        [
            "line 4: not valid JSON: key must be a string at column 2",
            "line 5: a line must be a JSON object, found an array",
            "line 6: missing field \"error_message\" (a string)",
            "line 7: \"error_message\" must be a string, found 42",
            "line 8: unknown stop_reason \"finished\"; expected one of \"error\", \"stop\", \"tool_use\", \"length\", \"aborted\"",
            "line 9: \"status\" must be a whole number from 100 to 599, found 1000",
            "line 10: \"status\" must be a whole number from 100 to 599, found the string \"429\"",
            "line 11: unknown field \"stop_reson\"; did you mean \"stop_reason\"? \
             (valid fields: error_message, stop_reason, status, should_retry, code)",
        ]
    );
    // One output line per non-blank input line, in order; error lines hold only "error".
    assert_eq!(lines.len(), 10);
    assert_eq!(verdicts(&lines[0]).1, "matched retry pattern \"overloaded\"");
    assert_eq!(verdicts(&lines[9]).1, "matched retry pattern \"503\"");
    for line in &lines[1..9] {
        assert_eq!(line.as_object().unwrap().len(), 1);
    }
}

#[test]
fn well_formed_input_exits_0_and_blank_lines_give_no_output() {
    let run = agentic(&["classify", "--json"], "\n{\"error_message\": \"\"}\r\n\n");
    assert_eq!(run.code, 0);
    let output = run.json();
    assert_eq!(verdicts(&output).1, "empty error message (a dropped stream)");
    let empty = agentic(&["classify", "--json"], "");
    assert_eq!((empty.code, empty.stdout.as_str()), (0, ""));
}

#[test]
fn a_line_that_is_not_utf8_is_malformed() {
    let run = agentic(&["classify", "--json"], b"{\"error_message\": \"a\xff\"}\n{\"error_message\": \"503\"}\n");
    assert_eq!(run.code, 1);
    let lines = run.json_lines();
    assert_eq!(lines[0], json!({"error": "line 1: not valid UTF-8"}));
    assert!(verdicts(&lines[1]).0);
}

#[test]
fn json_with_text_arguments_classifies_the_arguments() {
    let run = agentic(&["classify", "--json", "overloaded", "invalid api key"], "{\"ignored\": true}\n");
    assert_eq!(run.code, 0);
    let lines = run.json_lines();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0], classify(json!({"error_message": "overloaded"})));
    assert_eq!(verdicts(&lines[1]).2, "fail_permanently");
}

#[test]
fn plain_output_reads_as_the_issue_shows() {
    let run = agentic(&["classify", "429 Too Many Requests", "took 15000 ms"], "");
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stdout,
        "\"429 Too Many Requests\"\n\
         \x20 session: retryable (matched retry pattern \"too many requests\")\n\
         \x20 exec:    retry (no permanent marker, status or code)\n\
         \"took 15000 ms\"\n\
         \x20 session: not retryable (matched no retry pattern)\n\
         \x20 exec:    retry (no permanent marker, status or code)\n"
    );
}

#[test]
fn plain_reads_stdin_lines_when_given_no_text() {
    let run = agentic(&["classify"], "prompt is too long: 250000 tokens\n\nTypeError: x\n");
    assert_eq!(run.code, 0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "\"prompt is too long: 250000 tokens\"",
            "  session: not retryable (context overflow: matched \"prompt is too long\")",
            "  exec:    context_overflow (context overflow: matched \"prompt is too long\")",
            "\"TypeError: x\"",
            "  session: not retryable (matched no retry pattern)",
            "  exec:    raise (programming error (TypeError): fix the code, retrying cannot help)",
        ]
    );
}

#[test]
fn bad_arguments_are_usage_errors_and_help_states_the_contract() {
    let run = agentic(&["classify", "--bogus"], "");
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--bogus"), "{}", run.stderr);
    assert_eq!(agentic(&[], "").code, 2);
    assert_eq!(agentic(&["frobnicate"], "").code, 2);

    let help = agentic(&["classify", "--help"], "");
    assert_eq!(help.code, 0);
    for part in
        ["\"error_message\": str", "\"stop_reason\"?", "\"status\"?: int", "fail_permanently", "line N:", "Exit status"]
    {
        assert!(help.stdout.contains(part), "help lacks {part:?}:\n{}", help.stdout);
    }
}

#[test]
fn plain_reports_a_line_that_is_not_utf8_on_stderr_and_exits_1() {
    let run = agentic(&["classify"], b"a\xff\noverloaded\n");
    assert_eq!(run.code, 1);
    assert_eq!(run.stderr, "error: line 1: not valid UTF-8\n");
    assert!(run.stdout.starts_with("\"overloaded\"\n  session: retryable"), "{}", run.stdout);
}

/// A bodiless 400 is a context overflow for both layers, even behind a `"<Kind>: "` prefix.
#[test]
fn a_bodiless_400_is_a_context_overflow_for_both_layers() {
    let (retryable, _, action, _) = message("400 (no body)");
    assert!(!retryable);
    assert_eq!(action, "context_overflow");
}

#[test]
fn control_sequences_in_a_message_are_escaped_in_the_plain_output() {
    let hostile = "429 \x1b]0;pwned\x07\x1b[2K\r \u{9b}2J";
    for run in [agentic(&["classify", hostile], ""), agentic(&["classify"], format!("{hostile}\n"))] {
        assert_eq!(run.code, 0, "{run:?}");
        assert!(!run.stdout.chars().any(|c| c.is_control() && c != '\n'), "{:?}", run.stdout);
        assert!(run.stdout.starts_with("\"429 \\u001b]0;pwned\\u0007\\u001b[2K\\r \\u{9b}2J\"\n"), "{}", run.stdout);
    }
}

#[test]
fn a_server_hint_in_the_text_is_reported_as_retry_after_ms() {
    let gemini_body = r#"{"error": {"code": 429, "message": "You exceeded your current quota. Please retry in 34.07s.", "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34s"}]}}"#;
    let cases = [
        ("You exceeded your current quota, please retry in 34.07s", 34_070),
        // The body's RetryInfo is what the runtime reads before the prose beside it.
        (gemini_body, 34_000),
        ("Rate limit reached. Please try again in 20ms.", 20),
        ("429 Resource has been exhausted [retry_delay {\n  seconds: 12\n}\n]", 12_000),
    ];
    for (text, expected) in cases {
        let output = classify(json!({ "error_message": text }));
        assert_eq!(output["retry_after_ms"], json!(expected), "{text}");
        assert_eq!(keys(&output), ["exec", "retry_after_ms", "session"], "{text}");
    }
    // None stated: the field is absent, not null.
    for text in ["overloaded", "RESOURCE_EXHAUSTED: Resource has been exhausted (e.g. check quota).", "retry later"] {
        let output = classify(json!({ "error_message": text }));
        assert_eq!(keys(&output), ["exec", "session"], "{text}");
    }
    // The field comes last, after the contract's two.
    let run = agentic(&["classify", "--json", "try again in 2s"], "");
    assert!(run.stdout.ends_with(",\"retry_after_ms\":2000}\n"), "{run:?}");
}

#[test]
fn plain_output_says_the_servers_hint() {
    let run = agentic(&["classify", "Rate limit reached. Please try again in 2.5s.", "overloaded"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let blocks: Vec<&str> = run.stdout.split("\n\"").collect();
    assert!(blocks[0].ends_with("\n  hint:    the server asks to wait 2.5 s"), "{}", run.stdout);
    assert!(!blocks[1].contains("hint:"), "{}", run.stdout);
}
