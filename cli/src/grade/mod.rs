//! `agentic grade`: read JSONL traces and put every run in one category.
//!
//! The runtime writes the traces (`agentic_runtime::observe::trace`); the command reads them:
//! [`line`](mod@line) checks one line, [`head`] keeps the start of each line for a line too long
//! to read, [`grader`] groups the lines by run within a memory bound, [`run`](mod@run) grades a
//! run, and [`report`] is what it found.

mod grader;
mod head;
mod line;
mod report;
mod run;

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufReader};
use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;

use crate::input::{emit, emit_text, usage_error};
use crate::terminal::shown;
use crate::text::shorten;
use grader::{Grader, MAX_GRADER_BYTES};
use report::{Category, GradeReport, GradeTotals, RunGrade};

/// The help text of `agentic grade`.
pub(crate) const LONG_ABOUT: &str = "\
Read JSONL traces (agent_start, tool_call, tool_result, agent_finish lines, as the runtime's trace \
sink writes them), group the events by run_id across all the files, and put every run in one \
category; the first that applies wins:

  unreadable              a line of the run was skipped (malformed or over-long): it may have been a \
failed tool or the agent_finish, so the run cannot be graded
  incomplete              no agent_finish (the retry layers gave up, or the run was cut short)
  tool_error_unrecovered  a tool returned an error and no later call of that same tool succeeded
  tool_error_recovered    every tool error was followed by a successful call of the same tool
  clean                   no tool returned an error

Prints one line per run, then the totals; an id, function or tool name longer than 64 characters \
is shortened there (with `…`), never in --json. A malformed line (not JSON, an unknown event, a \
missing run_id, tool, call_id or is_error, not UTF-8, longer than 1 MiB) is reported on stderr as \
`warning: FILE:LINE: what is wrong` and skipped; blank lines are skipped silently. The first 100 \
malformed lines are reported, the others counted. A skipped line counts against the run its run_id \
names (read from the start of an over-long line, and from broken JSON), or, when it names none, against \
every run started and not finished when it was read. FILE `-` reads stdin.

With --json, stdout has one JSON object per run, in the order the runs first appear:
  {\"run_id\": \"run-5f1c...\", \"file\": \"trace.jsonl\", \"function\": \"weather\" or null, \
\"category\": \"tool_error_recovered\", \"tool_calls\": 3, \"tool_errors\": 2, \
\"unrecovered_tools\": [], \"iterations\": 3 or null, \"skipped_lines\": 0}
then one totals object:
  {\"totals\": {\"runs\": 4, \"clean\": 1, \"tool_error_recovered\": 1, \"tool_error_unrecovered\": 1, \
\"incomplete\": 1, \"unreadable\": 0, \"malformed_lines\": 0}}

Limits, so that no input takes all the memory there is: a line may be at most 1 MiB (a longer one \
is skipped without being read into memory, as malformed, and one that runs past 64 MiB without a \
line ending stops the reading with exit code 2: that input is not JSONL); the runs tracked across all the files may \
take at most 256 MiB (about a million runs or ten million tool calls), past which grading stops \
with an error naming the line: grade the traces in parts then, each run's lines in one part.

Exit codes: 0 graded (whatever the categories: grading is not failing); 1 graded, but some lines \
were malformed and skipped; 2 a file could not be read or the runs passed 256 MiB (nothing is \
printed on stdout), or bad arguments.";

/// The most characters of an id, a function or a tool name the plain output shows: enough for any
/// id a runtime makes (`run-` and 16 hex digits), short enough to keep the columns readable.
const MAX_SHOWN_CHARS: usize = 64;

/// `agentic grade` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The trace files (JSONL); `-` reads stdin.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
    /// One JSON object per run, then a totals object (shapes in the long help).
    #[arg(long)]
    json: bool,
}

/// Runs `agentic grade`.
pub(crate) fn run(args: &Args) -> ExitCode {
    let mut grader = Grader::new(MAX_GRADER_BYTES);
    for path in &args.files {
        let read = if path.as_os_str() == "-" {
            grader.read("<stdin>", io::stdin().lock())
        } else {
            let name = path.display().to_string();
            File::open(path).and_then(|file| grader.read(&name, BufReader::new(file)))
        };
        match read {
            Ok(()) => {}
            // The grader's message names the file and line, and says what to do.
            Err(error) if error.kind() == io::ErrorKind::OutOfMemory => return usage_error(error),
            Err(error) => return usage_error(format!("cannot read `{}`: {error}", path.display())),
        }
    }
    let report = grader.finish();
    for line in &report.malformed {
        eprintln!("warning: {}", shown(line));
    }
    let unshown = report.malformed_lines.saturating_sub(report.malformed.len());
    if unshown > 0 {
        eprintln!("warning: {} not shown", plural(unshown, "more malformed line", "more malformed lines"));
    }
    let mut out = io::stdout().lock();
    if args.json {
        print_json(&mut out, &report)
    } else {
        print_plain(&mut out, &report)
    };
    if report.malformed_lines == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// One run in `--json`.
#[derive(Serialize)]
struct RunJson<'a> {
    run_id: &'a str,
    file: &'a str,
    function: Option<&'a str>,
    category: Category,
    tool_calls: usize,
    tool_errors: usize,
    unrecovered_tools: &'a [String],
    iterations: Option<u64>,
    skipped_lines: usize,
}

impl<'a> From<&'a RunGrade> for RunJson<'a> {
    fn from(run: &'a RunGrade) -> Self {
        Self {
            run_id: &run.run_id,
            file: &run.source,
            function: run.function.as_deref(),
            category: run.category,
            tool_calls: run.tool_calls,
            tool_errors: run.tool_errors,
            unrecovered_tools: &run.unrecovered_tools,
            iterations: run.iterations,
            skipped_lines: run.skipped_lines,
        }
    }
}

#[derive(Serialize)]
struct TotalsJson {
    totals: GradeTotals,
}

fn print_json(out: &mut impl io::Write, report: &GradeReport) {
    for run in &report.runs {
        let line = serde_json::to_string(&RunJson::from(run)).expect("a run serializes");
        if !emit(out, line) {
            return;
        }
    }
    let totals = serde_json::to_string(&TotalsJson { totals: report.totals() }).expect("totals serialize");
    emit(out, totals);
}

fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

fn print_plain(out: &mut impl io::Write, report: &GradeReport) {
    let ids: Vec<Cow<'_, str>> = report.runs.iter().map(|run| shorten(&run.run_id, MAX_SHOWN_CHARS)).collect();
    // Characters, not bytes: `{:width$}` pads to a number of characters.
    let id_width = ids.iter().map(|id| id.chars().count()).max().unwrap_or(0);
    let category_width = Category::ALL.iter().map(|category| category.name().len()).max().unwrap_or(0);
    for (run, id) in report.runs.iter().zip(&ids) {
        let mut details = format!(
            "{}, {}",
            plural(run.tool_calls, "tool call", "tool calls"),
            plural(run.tool_errors, "error", "errors")
        );
        if let Some(iterations) = run.iterations {
            details.push_str(&format!(", {iterations} iteration{}", if iterations == 1 { "" } else { "s" }));
        }
        if run.skipped_lines > 0 {
            details.push_str(&format!(", {}", plural(run.skipped_lines, "skipped line", "skipped lines")));
        }
        if !run.unrecovered_tools.is_empty() {
            let tools: Vec<Cow<'_, str>> =
                run.unrecovered_tools.iter().map(|tool| shorten(tool, MAX_SHOWN_CHARS)).collect();
            details.push_str(&format!("; unrecovered: {}", tools.join(", ")));
        }
        let function = run.function.as_deref().map_or(Cow::Borrowed("-"), |name| shorten(name, MAX_SHOWN_CHARS));
        let line = format!("{id:id_width$}  {:category_width$}  {function}  ({details})", run.category.name());
        if !emit_text(out, line) {
            return;
        }
    }
    let totals = report.totals();
    let counts: Vec<String> =
        Category::ALL.iter().rev().map(|category| format!("{} {category}", totals.count(*category))).collect();
    let mut line = format!("total: {}: {}", plural(totals.runs, "run", "runs"), counts.join(", "));
    if totals.malformed_lines > 0 {
        line.push_str(&format!("; {} skipped", plural(totals.malformed_lines, "malformed line", "malformed lines")));
    }
    emit_text(out, line);
}
