//! `agentic journal`: how often each cause made calls fail, from a failure journal file.
//!
//! The journal is written by `agentic_runtime::journal::Journal`; this command reads it with
//! `count_journal` (one line at a time, keeping only the counts) and prints them as a table or as
//! JSON lines.

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use agentic_runtime::journal::{Count, count_journal, now_ms};
use agentic_runtime::lines::shorten;
use serde::Serialize;

use crate::input::{emit, usage_error};

/// The help text of `agentic journal`.
pub(crate) const LONG_ABOUT: &str = "\
Count the failures in a failure journal by cause: which function failed, why, and how often.

FILE is a journal written by agentic_runtime::journal::Journal: one JSON record per line, with \
time_ms (milliseconds since the Unix epoch), event (\"failure\", or \"retry\" when retries are \
journaled too), op (\"exec\"), name (the agent function, or \"exec\"), kind (permanent, exhausted, \
programming, context_overflow, budget, invalid_result; \"retry\" for a retry), attempts (each \
decision: layer, attempt, call, error, verdict, reason, delay_ms), last_error, status, code, \
stopped_by, calls and elapsed_ms.

Records are grouped by event, op, name, kind and a label that sums up the last error: \"context \
overflow\", \"rejected by validator\", \"quota exhausted\", an HTTP status and its name (\"429 rate \
limited\", \"401 unauthorized\", \"503 unavailable\", \"529 overloaded\", \"418 client error\"), the \
transport failure (\"timeout\", \"connection failed\", \"connection reset\", \"dropped stream\", \
\"truncated stream\", \"malformed stream\"), \"rate limited\" or \"overloaded\" from the text, else \
the error's kind (\"ValueError\") or its text cut to 40 characters. Groups are printed most \
frequent first, then most recent first:

  journal.jsonl: 7 records in 2 groups since 24h ago
  exec summarize: 429 rate limited x5 (exhausted, last 2026-11-30 14:02 UTC)
  exec: dropped stream x2 (budget, last 2026-11-30 09:41 UTC)

\"exec summarize\" is an exec of the agent function summarize; a plain exec is \"exec\". In \
parentheses: the kind of failure (or \"retry\" for retried failures) and the time of the latest \
one, in UTC.

--since DURATION keeps the records of the last DURATION: a whole number followed by s, m, h or d \
(90s, 30m, 24h, 7d). Without it every record counts.

--json prints one JSON object per group, most frequent first, and no header:

  {\"event\": \"failure\"|\"retry\", \"op\": str, \"name\": str, \"kind\": str, \"label\": str,
   \"count\": int, \"first_ms\": int, \"last_ms\": int, \"first\": str, \"last\": str}

(first and last are the times of the earliest and latest record of the group, in milliseconds \
since the Unix epoch and as RFC 3339 UTC text, e.g. \"2026-11-30T14:02:07.123Z\").

A line that is not a record (not UTF-8, not JSON, a missing or ill-typed field, longer than 1 MiB, \
a last line cut short by a writer that stopped) is reported on stderr as FILE:LINE: <what is \
wrong>, and skipped; LINE counts every line from 1. The first 100 corrupt lines are reported, the \
others counted. Blank lines are skipped silently. In the table, an op, name, kind or label longer \
than 64 characters is shortened (with `…`), never in --json.

Limits, so that no file takes all the memory there is: the journal is read one line at a time and \
only the counts are kept; a line may be at most 1 MiB (a longer one is skipped without being read \
into memory, as corrupt); the groups may take at most 64 MiB (far more than the few hundred causes \
of a real journal), past which counting stops with an error: count a shorter window with --since.

Exit status: 0 when the file was read, corrupt lines or not; 2 when it cannot be read (missing, \
unreadable), its groups pass 64 MiB, or the arguments are wrong (an invalid --since).";

/// The most characters of an op, name, kind or label the table shows: labels are at most 41, and
/// a function name longer than 64 characters is a mistake the table need not spell out.
const MAX_SHOWN_CHARS: usize = 64;

/// Arguments of `agentic journal`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The journal file: one JSON failure record per line.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Count only the records of the last DURATION: a whole number and s, m, h or d (90s, 30m, 24h, 7d).
    #[arg(long, value_name = "DURATION", value_parser = parse_since)]
    since: Option<Since>,
    /// Print one JSON object per group instead of the table.
    #[arg(long)]
    json: bool,
}

/// A `--since` window: as the user wrote it, and in milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Since {
    text: String,
    ms: u64,
}

/// Parses `--since`: a whole number followed by `s`, `m`, `h` or `d`.
fn parse_since(text: &str) -> Result<Since, String> {
    const EXPECTED: &str = "expected a whole number followed by s, m, h or d, e.g. 90s, 30m, 24h, 7d";
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    if number.is_empty() {
        return Err(format!("{EXPECTED}; the number is missing"));
    }
    let unit_ms: u64 = match unit {
        "s" => 1000,
        "m" => 60 * 1000,
        "h" => 3600 * 1000,
        "d" => 24 * 3600 * 1000,
        "" => return Err(format!("{EXPECTED}; the unit is missing")),
        other => return Err(format!("{EXPECTED}; unknown unit \"{other}\"")),
    };
    let ms = number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit_ms))
        .ok_or_else(|| format!("the window {text} is too long"))?;
    Ok(Since { text: text.to_owned(), ms })
}

/// One `--json` line.
#[derive(Serialize)]
struct JsonCount<'a> {
    #[serde(flatten)]
    count: &'a Count,
    first: String,
    last: String,
}

/// Runs `agentic journal`.
pub(crate) fn run(args: &Args) -> ExitCode {
    let since_ms = args.since.as_ref().map_or(0, |since| now_ms().saturating_sub(since.ms));
    let contents = match count_journal(&args.file, since_ms) {
        Ok(contents) => contents,
        Err(error) if error.kind() == io::ErrorKind::OutOfMemory => {
            return usage_error(format!("cannot count {}: {error}", args.file.display()));
        }
        Err(error) => return usage_error(format!("cannot read {}: {error}", args.file.display())),
    };
    for corrupt in &contents.corrupt {
        eprintln!("{}:{}: {}", args.file.display(), corrupt.line, corrupt.error);
    }
    let unshown = contents.corrupt_lines.saturating_sub(contents.corrupt.len());
    if unshown > 0 {
        eprintln!("{}: {unshown} more corrupt line{} not shown", args.file.display(), plural(unshown));
    }
    let counts = contents.counts;
    let mut out = io::stdout().lock();
    if args.json {
        for count in &counts {
            let line = JsonCount { count, first: rfc3339(count.first_ms), last: rfc3339(count.last_ms) };
            if !emit(&mut out, serde_json::to_string(&line).expect("strings and numbers serialize")) {
                break;
            }
        }
        return ExitCode::SUCCESS;
    }
    let window = match &args.since {
        Some(since) => format!("since {} ago", since.text),
        None => "in the whole journal".to_owned(),
    };
    let records: usize = counts.iter().map(|count| count.count).sum();
    let header = match counts.len() {
        0 => format!("{}: no records {window}", args.file.display()),
        groups => format!(
            "{}: {records} record{} in {groups} group{} {window}",
            args.file.display(),
            plural(records),
            plural(groups)
        ),
    };
    if emit(&mut out, header) {
        for count in &counts {
            if !emit(&mut out, row(count)) {
                break;
            }
        }
    }
    ExitCode::SUCCESS
}

/// `exec summarize: 429 rate limited x5 (exhausted, last 2026-11-30 14:02 UTC)`.
fn row(count: &Count) -> String {
    let [op, name, kind, label] =
        [&count.op, &count.name, &count.kind, &count.label].map(|text| shorten(text, MAX_SHOWN_CHARS));
    let who = if count.name == count.op { op.into_owned() } else { format!("{op} {name}") };
    format!("{who}: {label} x{} ({kind}, last {} UTC)", count.count, minutes(count.last_ms))
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// A time in UTC, broken down: (year, month, day, hour, minute, second, millisecond).
fn utc(time_ms: u64) -> (i64, u64, u64, u64, u64, u64, u64) {
    let (secs, millis) = (time_ms / 1000, time_ms % 1000);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days, for days since 1970-01-01.
    let z = i64::try_from(days).unwrap_or(i64::MAX - 719_468) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let whole = |value: i64| u64::try_from(value).unwrap_or_default();
    (year, whole(month), whole(day), rest / 3600, rest % 3600 / 60, rest % 60, millis)
}

/// `2026-11-30 14:02`.
fn minutes(time_ms: u64) -> String {
    let (year, month, day, hour, minute, _, _) = utc(time_ms);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}")
}

/// `2026-11-30T14:02:07.123Z`.
fn rfc3339(time_ms: u64) -> String {
    let (year, month, day, hour, minute, second, millis) = utc(time_ms);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_whole_number_and_a_unit() {
        let ms = |text: &str| parse_since(text).map(|since| since.ms);
        assert_eq!(ms("90s"), Ok(90_000));
        assert_eq!(ms("30m"), Ok(1_800_000));
        assert_eq!(ms("24h"), Ok(86_400_000));
        assert_eq!(ms("7d"), Ok(604_800_000));
        assert_eq!(ms("0s"), Ok(0));
        let expected = "expected a whole number followed by s, m, h or d, e.g. 90s, 30m, 24h, 7d";
        assert_eq!(ms("24"), Err(format!("{expected}; the unit is missing")));
        assert_eq!(ms("h"), Err(format!("{expected}; the number is missing")));
        assert_eq!(ms(""), Err(format!("{expected}; the number is missing")));
        assert_eq!(ms("-5m"), Err(format!("{expected}; the number is missing")));
        assert_eq!(ms("5w"), Err(format!("{expected}; unknown unit \"w\"")));
        assert_eq!(ms("1.5h"), Err(format!("{expected}; unknown unit \".5h\"")));
        assert_eq!(ms("24 h"), Err(format!("{expected}; unknown unit \" h\"")));
        assert_eq!(ms("24H"), Err(format!("{expected}; unknown unit \"H\"")));
        assert_eq!(ms("99999999999999999999d"), Err("the window 99999999999999999999d is too long".to_owned()));
        assert_eq!(ms("999999999999999d"), Err("the window 999999999999999d is too long".to_owned()));
    }

    #[test]
    fn times_are_shown_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_796_047_327_123), "2026-11-30T14:02:07.123Z");
        assert_eq!(minutes(1_796_047_327_123), "2026-11-30 14:02");
        assert_eq!(rfc3339(951_868_799_000), "2000-02-29T23:59:59.000Z");
        assert_eq!(rfc3339(951_868_800_000), "2000-03-01T00:00:00.000Z");
        assert_eq!(rfc3339(4_107_542_400_000), "2100-03-01T00:00:00.000Z");
        assert!(rfc3339(u64::MAX).ends_with('Z'));
    }
}
