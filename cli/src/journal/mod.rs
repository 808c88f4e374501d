//! `agentic journal`: how often each cause made calls fail, from a failure journal file.
//!
//! The journal is written by `agentic_runtime::observe::journal::Journal`; this command reads it
//! ([`read`]: each line the record it holds, or what is wrong with it), counts the records by cause
//! ([`count`], one line at a time, keeping only the counts; [`label`], the cause) and prints the
//! counts as a table or as JSON lines.

mod count;
mod label;
mod read;

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentic_runtime::observe::journal::now_ms;
use count::{Count, count_journal};
use serde::Serialize;

use crate::input::{emit, emit_text, usage_error};
use crate::terminal::shown;
use crate::text::shorten;

/// The help text of `agentic journal`.
pub(crate) const LONG_ABOUT: &str = "\
Count the failures in a failure journal by cause: which function failed, why, and how often.

FILE is a journal written by agentic_runtime::observe::journal::Journal: one JSON record per line, with \
time_ms (milliseconds since the Unix epoch), event (\"failure\", or \"retry\" when retries are \
journaled too), op (\"exec\"), name (the agent function, or \"exec\"), kind (permanent, exhausted, \
programming, context_overflow, refused, invalid_result, max_iterations, usage_limit; \"retry\" for a retry; \
an older version's kind budget counts as refused), attempts (each decision: layer, attempt, call, \
error, verdict, reason, delay_ms), last_error, status, code, stopped_by, calls and elapsed_ms.

Records are grouped by event, op, name, kind and a label that sums up the last error: \"context \
overflow\", \"rejected by validator\", \"quota exhausted\", an HTTP status and its name (\"429 rate \
limited\", \"401 unauthorized\", \"503 unavailable\", \"529 overloaded\", \"418 client error\"), the \
transport failure (\"timeout\", \"connection failed\", \"connection reset\", \"dropped stream\", \
\"truncated stream\", \"malformed stream\"), \"rate limited\" or \"overloaded\" from the text, else \
the error's kind (\"ValueError\") or its text cut to 40 characters. Groups are printed most \
frequent first, then most recent first:

  journal.jsonl: 7 records in 2 groups since 24h ago
  exec summarize: 429 rate limited x5 (exhausted, last 2026-11-30 14:02 UTC)
  exec: dropped stream x2 (refused, last 2026-11-30 09:41 UTC)

\"exec summarize\" is an exec of the agent function summarize; a plain exec is \"exec\". In \
parentheses: the kind of failure (or \"retry\" for retried failures) and the time of the latest \
one, in UTC.

--since DURATION keeps the records of the last DURATION: a whole number followed by s, m, h or d \
(90s, 30m, 24h, 7d), or several added up (1h30m). Without it every record counts.

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
into memory, as corrupt, and one that runs past 64 MiB without a line ending stops the reading \
with exit status 2: that file is not a journal); the groups may take at most 64 MiB (far more than the few hundred causes \
of a real journal), past which counting stops with an error: count a shorter window with --since.

Exit status: 0 when the file was read, corrupt lines or not; 2 when it cannot be read (missing, \
unreadable, or a line with no end such as /dev/zero), its groups pass 64 MiB, or the arguments are wrong (an invalid --since).";

/// The most characters of an op, name, kind or label the table shows: labels are at most 41, and
/// a function name longer than 64 characters is a mistake the table need not spell out.
const MAX_SHOWN_CHARS: usize = 64;

/// Arguments of `agentic journal`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The journal file: one JSON failure record per line.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Count only the records of the last DURATION: a whole number and s, m, h or d (90s, 30m, 24h, 7d),
    /// or several added up (1h30m).
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

/// What `--since` takes, for its errors.
const SINCE_EXPECTED: &str = "expected a whole number followed by s, m, h or d, e.g. 90s, 30m, 24h, 7d";

/// Parses `--since`: a whole number followed by `s`, `m`, `h` or `d`, or several added up (`1h30m`).
fn parse_since(text: &str) -> Result<Since, String> {
    check_since_units(text)?;
    let too_long = || format!("the window {text} is too long");
    let window = humantime::parse_duration(text).map_err(|error| match error {
        humantime::DurationError::NumberOverflow => too_long(),
        other => format!("{SINCE_EXPECTED}; {other}"),
    })?;
    let ms = u64::try_from(window.as_millis()).map_err(|_| too_long())?;
    Ok(Since { text: text.to_owned(), ms })
}

/// Checks that `text` is whole numbers each followed by `s`, `m`, `h` or `d`, with nothing between:
/// the part of humantime's grammar `--since` takes (humantime also reads weeks, months, years,
/// spelled-out units and spaces), with errors that say which part is wrong.
fn check_since_units(text: &str) -> Result<(), String> {
    let mut rest = text;
    loop {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return Err(format!("{SINCE_EXPECTED}; the number is missing"));
        }
        let after = &rest[digits..];
        let (unit, next) = after.split_at(after.find(|c: char| c.is_ascii_digit()).unwrap_or(after.len()));
        match unit {
            "s" | "m" | "h" | "d" => {}
            "" => return Err(format!("{SINCE_EXPECTED}; the unit is missing")),
            _ => return Err(format!("{SINCE_EXPECTED}; unknown unit \"{after}\"")),
        }
        if next.is_empty() {
            return Ok(());
        }
        rest = next;
    }
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
        eprintln!("{}", shown(format_args!("{}:{}: {}", args.file.display(), corrupt.line, corrupt.error)));
    }
    let unshown = contents.corrupt_lines.saturating_sub(contents.corrupt.len());
    if unshown > 0 {
        eprintln!("{}: {unshown} more corrupt line{} not shown", shown(args.file.display()), plural(unshown));
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
    if emit_text(&mut out, header) {
        for count in &counts {
            if !emit_text(&mut out, row(count)) {
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

/// `2026-11-30 14:02`.
fn minutes(time_ms: u64) -> String {
    let seconds = humantime::format_rfc3339_seconds(system_time(time_ms)).to_string();
    // `2026-11-30T14:02:07Z`: the date, a space for the `T`, the hour and the minute.
    format!("{} {}", &seconds[..10], &seconds[11..16])
}

/// `2026-11-30T14:02:07.123Z`.
fn rfc3339(time_ms: u64) -> String {
    humantime::format_rfc3339_millis(system_time(time_ms)).to_string()
}

/// The time `time_ms` milliseconds after the Unix epoch, up to the last millisecond RFC 3339 can
/// write (the end of year 9999): a later time is a corrupt record, shown as that last millisecond.
fn system_time(time_ms: u64) -> SystemTime {
    const LAST_MS_OF_9999: u64 = 253_402_300_799_999;
    UNIX_EPOCH + Duration::from_millis(time_ms.min(LAST_MS_OF_9999))
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
    fn since_adds_up_several_parts() {
        let ms = |text: &str| parse_since(text).map(|since| since.ms);
        assert_eq!(ms("1h30m"), Ok(5_400_000));
        assert_eq!(ms("1d12h"), Ok(129_600_000));
        let expected = "expected a whole number followed by s, m, h or d, e.g. 90s, 30m, 24h, 7d";
        assert_eq!(ms("1h30"), Err(format!("{expected}; the unit is missing")));
        assert_eq!(ms("1h30x"), Err(format!("{expected}; unknown unit \"x\"")));
        assert_eq!(ms("1h 30m"), Err(format!("{expected}; unknown unit \"h 30m\"")));
        assert_eq!(ms("1w"), Err(format!("{expected}; unknown unit \"w\"")));
    }

    #[test]
    fn times_past_year_9999_show_as_its_last_millisecond() {
        assert_eq!(rfc3339(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(u64::MAX), "9999-12-31T23:59:59.999Z");
        assert_eq!(minutes(u64::MAX), "9999-12-31 23:59");
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
