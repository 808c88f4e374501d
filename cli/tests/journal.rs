//! `agentic journal`: the table, `--since`, `--json`, corrupt lines and exit codes.

use crate::common;

use agentic_test_support::temp_file::TempFile;

use agentic_runtime::observe::journal::{Event, FailureRecord, Journal, now_ms};
use common::agentic;
use serde_json::json;

/// 2026-11-30 14:02:07.123 UTC.
const NOV_30: u64 = 1_796_047_327_123;
const MINUTE: u64 = 60 * 1000;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;

fn failure(name: &str, kind: &str, last_error: &str, time_ms: u64) -> FailureRecord {
    FailureRecord::new(name, kind, last_error).with_time_ms(time_ms)
}

fn rate_limited(name: &str, time_ms: u64) -> FailureRecord {
    let mut record = failure(name, "exhausted", "RateLimitError: 429 Too Many Requests", time_ms);
    record.status = Some(429);
    record
}

/// A journal in a temp file holding `records` (retries kept).
fn journal_with(test: &str, records: &[FailureRecord]) -> TempFile {
    let file = TempFile::new(test);
    let journal = Journal::open(file.path()).unwrap().with_retries(true);
    for record in records {
        journal.record(record).unwrap();
    }
    file
}

#[test]
fn prints_one_row_per_cause_most_frequent_first() {
    let mut retry = failure("summarize", "retry", "ServiceUnavailableError: 503", NOV_30 - 3 * HOUR);
    retry.event = Event::Retry;
    let file = journal_with(
        "table",
        &[
            rate_limited("summarize", NOV_30 - 5 * MINUTE),
            rate_limited("summarize", NOV_30 - 4 * MINUTE),
            failure("exec", "refused", "ModelError", NOV_30 - 5 * HOUR),
            rate_limited("summarize", NOV_30),
            failure("exec", "refused", "StreamDroppedError: connection closed", NOV_30 - DAY),
            failure("extract", "permanent", "AuthenticationError: 401 invalid api key", NOV_30 - 2 * DAY),
            retry,
        ],
    );
    let run = agentic(&["journal", file.arg()], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "");
    assert_eq!(
        run.stdout,
        format!(
            "{}: 7 records in 4 groups in the whole journal\n\
             exec summarize: 429 rate limited x3 (exhausted, last 2026-11-30 14:02 UTC)\n\
             exec: dropped stream x2 (refused, last 2026-11-30 09:02 UTC)\n\
             exec summarize: 503 unavailable x1 (retry, last 2026-11-30 11:02 UTC)\n\
             exec extract: 401 unauthorized x1 (permanent, last 2026-11-28 14:02 UTC)\n",
            file.arg()
        )
    );
}

#[test]
fn since_keeps_the_last_window_only() {
    let now = now_ms();
    let file = journal_with(
        "since",
        &[
            rate_limited("summarize", now - HOUR),
            rate_limited("summarize", now - 2 * HOUR),
            rate_limited("summarize", now - 3 * DAY),
            failure("exec", "exhausted", "TimeoutError: no reply", now - 20 * MINUTE),
        ],
    );
    let summary = |since: &str| {
        let run = agentic(&["journal", file.arg(), "--since", since], "");
        assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
        let mut lines = run.stdout.lines();
        let header = lines.next().expect("a header").strip_prefix(file.arg()).expect("the file first").to_owned();
        let rows: Vec<String> = lines.map(|line| line.split(" (").next().unwrap().to_owned()).collect();
        (header, rows)
    };
    assert_eq!(
        summary("24h"),
        (
            ": 3 records in 2 groups since 24h ago".to_owned(),
            vec!["exec summarize: 429 rate limited x2".to_owned(), "exec: timeout x1".to_owned()]
        )
    );
    assert_eq!(summary("7d").1, ["exec summarize: 429 rate limited x3", "exec: timeout x1"]);
    assert_eq!(summary("30m"), (": 1 record in 1 group since 30m ago".to_owned(), vec!["exec: timeout x1".to_owned()]));
    assert_eq!(summary("90s"), (": no records since 90s ago".to_owned(), vec![]));
}

#[test]
fn json_prints_one_object_per_group() {
    let file = journal_with(
        "json",
        &[
            rate_limited("summarize", NOV_30 - 1000),
            rate_limited("summarize", NOV_30),
            failure("exec", "context_overflow", "BadRequestError: 400 prompt is too long", 5),
        ],
    );
    let run = agentic(&["journal", file.arg(), "--json"], "");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    assert_eq!(
        run.json_lines(),
        [
            json!({
                "event": "failure", "op": "exec", "name": "summarize", "kind": "exhausted",
                "label": "429 rate limited", "count": 2, "first_ms": NOV_30 - 1000, "last_ms": NOV_30,
                "first": "2026-11-30T14:02:06.123Z", "last": "2026-11-30T14:02:07.123Z",
            }),
            json!({
                "event": "failure", "op": "exec", "name": "exec", "kind": "context_overflow",
                "label": "context overflow", "count": 1, "first_ms": 5, "last_ms": 5,
                "first": "1970-01-01T00:00:00.005Z", "last": "1970-01-01T00:00:00.005Z",
            }),
        ]
    );

    let run = agentic(&["journal", file.arg(), "--json", "--since", "1d"], "");
    assert_eq!(run.code, 0);
    assert!(run.json_lines().iter().all(|group| group["label"] != "context overflow"), "1970 is not in the last day");
}

#[test]
fn corrupt_lines_are_reported_with_their_numbers_and_skipped() {
    let file = journal_with("corrupt", &[rate_limited("summarize", NOV_30)]);
    file.append_raw(b"{\"time_ms\": 1, \"name\": \"x\"}\n\n");
    Journal::open(file.path()).unwrap().record(&rate_limited("summarize", NOV_30 - 1)).unwrap();
    file.append_raw(b"\xff\n{\"time_ms\":17964");

    let run = agentic(&["journal", file.arg()], "");
    assert_eq!(run.code, 0, "corrupt lines are not fatal: {run:?}");
    assert_eq!(
        run.stderr,
        format!(
            "{0}:2: missing field `kind` at column 27\n\
             {0}:5: not valid UTF-8 (invalid byte at column 1)\n\
             {0}:6: truncated last line (no newline): EOF while parsing an object at column 16\n",
            file.arg()
        )
    );
    assert_eq!(
        run.stdout,
        format!(
            "{}: 2 records in 1 group in the whole journal\n\
             exec summarize: 429 rate limited x2 (exhausted, last 2026-11-30 14:02 UTC)\n",
            file.arg()
        )
    );

    let run = agentic(&["journal", "--json", file.arg()], "");
    assert_eq!(run.code, 0);
    assert_eq!(run.stderr.lines().count(), 3);
    assert_eq!(run.json()["count"], 2);
}

/// A journal an older version wrote says `budget` where today's says `refused`: one cause, one row.
#[test]
fn an_older_journals_kind_budget_counts_as_refused() {
    let file = TempFile::with_contents(
        "older",
        "{\"time_ms\":1796047200000,\"event\":\"failure\",\"op\":\"exec\",\"name\":\"exec\",\"kind\":\"budget\",\
         \"attempts\":[],\"last_error\":\"RateLimitError: 429\",\"stopped_by\":\"the retry budget is empty\",\
         \"calls\":3,\"elapsed_ms\":9000}\n",
    );
    Journal::open(file.path()).unwrap().record(&failure("exec", "refused", "RateLimitError: 429", NOV_30)).unwrap();
    let run = agentic(&["journal", file.arg()], "");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    assert_eq!(
        run.stdout,
        format!(
            "{}: 2 records in 1 group in the whole journal\n\
             exec: 429 rate limited x2 (refused, last 2026-11-30 14:02 UTC)\n",
            file.arg()
        )
    );
}

#[test]
fn an_empty_journal_has_no_records() {
    let file = TempFile::new("empty");
    file.append_raw(b"");
    let run = agentic(&["journal", file.arg()], "");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert_eq!(run.stdout, format!("{}: no records in the whole journal\n", file.arg()));
}

#[test]
fn a_file_that_cannot_be_read_is_exit_2() {
    let file = TempFile::new("missing");
    let run = agentic(&["journal", file.arg()], "");
    assert_eq!(run.code, 2);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.starts_with(&format!("error: cannot read {}: ", file.arg())), "{}", run.stderr);

    let directory = std::env::temp_dir();
    let run = agentic(&["journal", directory.to_str().unwrap()], "");
    assert_eq!(run.code, 2, "a directory is no journal: {run:?}");
}

#[test]
fn a_bad_since_is_exit_2_with_the_expected_form() {
    let file = journal_with("bad-since", &[rate_limited("summarize", NOV_30)]);
    for (since, problem) in [
        ("5x", "unknown unit \"x\""),
        ("24", "the unit is missing"),
        ("h", "the number is missing"),
        ("1.5h", "unknown unit \".5h\""),
    ] {
        let run = agentic(&["journal", file.arg(), "--since", since], "");
        assert_eq!(run.code, 2, "{since}: {run:?}");
        assert_eq!(run.stdout, "");
        assert!(
            run.stderr.contains(&format!(
                "invalid value '{since}' for '--since <DURATION>': expected a whole number followed by s, m, h \
                 or d, e.g. 90s, 30m, 24h, 7d; {problem}"
            )),
            "{since}: {}",
            run.stderr
        );
    }
}

#[test]
fn the_long_help_documents_the_command() {
    let run = agentic(&["journal", "--help"], "");
    assert_eq!(run.code, 0);
    for needle in [
        "--since <DURATION>",
        "90s, 30m, 24h, 7d",
        "--json",
        "FILE:LINE: <what is wrong>",
        "Exit status: 0 when the file was read",
        "\"429 rate limited\"",
        "exec summarize: 429 rate limited x5 (exhausted, last 2026-11-30 14:02 UTC)",
    ] {
        assert!(run.stdout.contains(needle), "{needle:?} missing from:\n{}", run.stdout);
    }
    let run = agentic(&["--help"], "");
    assert!(run.stdout.contains("journal"), "{}", run.stdout);
}

#[test]
fn control_sequences_in_a_record_are_escaped_in_the_table_and_kept_in_json() {
    let name = "summarize\x1b]0;pwned\x07\x1b[2K\r";
    let file = journal_with("journal-escapes", &[failure(name, "exhausted", "ValueError: \x1b]52;c;eA==\x07", 1_000)]);
    let run = agentic(&["journal", file.arg()], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains('\x1b') && !run.stdout.contains('\r'), "{:?}", run.stdout);
    let row = run.stdout.lines().nth(1).unwrap();
    assert!(row.starts_with("exec summarize\\u{1b}]0;pwned\\u{7}\\u{1b}[2K\\r: "), "{row}");
    let json = agentic(&["journal", "--json", file.arg()], "");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&json.stdout).unwrap()["name"], name);
    // A corrupt line's report quotes nothing raw either.
    let corrupt = TempFile::with_contents("journal-escapes-corrupt", "\x1b]0;pwned\x07\n");
    let run = agentic(&["journal", corrupt.arg()], "");
    assert!(!run.stderr.contains('\x1b'), "{:?}", run.stderr);
}
