//! The grader: reads JSONL traces and puts every run in one category.
//!
//! | category | when |
//! | --- | --- |
//! | `unreadable` | a line of the run was skipped (malformed or over-long), so its grade cannot be known |
//! | `incomplete` | the run has no `agent_finish` (its retry layers gave up, or it was cut short) |
//! | `tool_error_unrecovered` | some tool returned an error and no later call of that same tool succeeded |
//! | `tool_error_recovered` | some tool returned an error, and every such error was followed by a successful call of the same tool |
//! | `clean` | no tool returned an error |
//!
//! The first matching row wins; `compaction` lines are counted per run and change no category.
//! Events are grouped by `run_id`, across all the sources read; the
//! order of calls is the order of their `tool_call` lines (a `tool_result` is matched to the
//! latest unanswered `tool_call` with its `call_id`; a result without a call counts as a call of
//! its `tool`, at its own place). A line that is not JSON, not an object, has an unknown `event`
//! or lacks a field its event needs (`run_id` always; `tool` and `call_id` for `tool_call`;
//! `call_id` and `is_error` (or `error`) for `tool_result`) is reported as malformed, with its
//! source and line number, and skipped. Blank lines are skipped silently; `ts_ms` and the other
//! fields are not needed to grade. A line longer than [`MAX_LINE_BYTES`](crate::util::lines::MAX_LINE_BYTES)
//! is malformed too, and skipped without being held in memory; the runs tracked may take up to
//! [`MAX_GRADER_BYTES`] (so that no input, however large, takes all the memory there is).
//!
//! A skipped line still counts against its run, which is graded `unreadable`: the line could have
//! been its failed tool result or its `agent_finish`. The run is the one its `run_id` names, read
//! from the line's text when it is not valid JSON, and from the start of an over-long line (the
//! runtime writes `run_id` third, in the first hundred bytes); a skipped line whose run cannot be
//! told counts against every run that had started and not finished when it was read.
//!
//! # Examples
//!
//! ```
//! use agentic_runtime::observe::trace::grade::{Category, grade_lines};
//!
//! let trace = r#"
//! {"event":"agent_start","run_id":"a","function":"weather"}
//! {"event":"tool_call","run_id":"a","tool":"get_weather","call_id":"1","arguments":{}}
//! {"event":"tool_result","run_id":"a","call_id":"1","is_error":true,"content":"RateLimitError: 429"}
//! {"event":"tool_call","run_id":"a","tool":"get_weather","call_id":"2","arguments":{}}
//! {"event":"tool_result","run_id":"a","call_id":"2","is_error":false,"content":"sunny"}
//! {"event":"agent_finish","run_id":"a","final_text":"Sunny.","iterations":3}
//! {"event":"agent_start","run_id":"b","function":"weather"}
//! {"event":"agent_start","run_id":"c","function":"weather"}
//! {"event":"tool_result","run_id":"c","call_id":"1","is_er
//! {"event":"agent_finish","run_id":"c","final_text":"Done.","iterations":2}
//! "#;
//! let report = grade_lines(trace.as_bytes()).unwrap();
//! assert_eq!(report.runs[0].category, Category::ToolErrorRecovered);
//! assert_eq!(report.runs[1].category, Category::Incomplete);
//! assert_eq!((report.runs[2].category, report.runs[2].skipped_lines), (Category::Unreadable, 1));
//! assert_eq!(report.malformed[0].to_string(), "<trace>:10: not JSON: EOF while parsing a string at line 1 column 56");
//! let totals = report.totals();
//! assert_eq!((totals.runs, totals.tool_error_recovered, totals.incomplete, totals.unreadable), (3, 1, 1, 1));
//! ```

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufRead};
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::util::lines::{BoundedLines, bytes_text, shorten};

/// What a run is graded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Category {
    /// A line of the run was skipped (malformed or over-long): whatever it said (a failed tool, the
    /// `agent_finish`) is unknown, so the run cannot be graded.
    Unreadable,
    /// No `agent_finish`: the run did not end with the model's answer.
    Incomplete,
    /// A tool returned an error and no later call of that same tool succeeded.
    ToolErrorUnrecovered,
    /// Every tool error was followed by a successful call of the same tool.
    ToolErrorRecovered,
    /// No tool error.
    Clean,
}

impl Category {
    /// Every category, in the order the grader checks them.
    pub const ALL: [Category; 5] = [
        Category::Unreadable,
        Category::Incomplete,
        Category::ToolErrorUnrecovered,
        Category::ToolErrorRecovered,
        Category::Clean,
    ];

    /// The name: `unreadable`, `incomplete`, `tool_error_unrecovered`, `tool_error_recovered`,
    /// `clean`.
    pub const fn name(self) -> &'static str {
        match self {
            Category::Unreadable => "unreadable",
            Category::Incomplete => "incomplete",
            Category::ToolErrorUnrecovered => "tool_error_unrecovered",
            Category::ToolErrorRecovered => "tool_error_recovered",
            Category::Clean => "clean",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The grade of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RunGrade {
    /// The run's id.
    pub run_id: String,
    /// The source (file) where the run's first line is.
    pub source: String,
    /// The agent function, from `agent_start` (none when absent or `null`).
    pub function: Option<String>,
    /// The category.
    pub category: Category,
    /// How many tool calls the run made (results without a call included).
    pub tool_calls: usize,
    /// How many of them returned an error.
    pub tool_errors: usize,
    /// The tools whose last call failed, in order of their first call.
    pub unrecovered_tools: Vec<String>,
    /// The `iterations` of `agent_finish`, if any.
    pub iterations: Option<u64>,
    /// How many times the run's conversation was compacted (its `compaction` lines); they do not
    /// change its category.
    pub compactions: usize,
    /// How many skipped lines belong, or may belong, to the run (see the [module](self) docs);
    /// when some do, the run is [`Category::Unreadable`].
    pub skipped_lines: usize,
}

/// A line the grader skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct MalformedLine {
    /// The source (file) it is in.
    pub source: String,
    /// Its line number, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for MalformedLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.source, self.line, self.reason)
    }
}

/// The grades of every run read, and the lines skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GradeReport {
    /// One grade per run, in the order the runs first appear.
    pub runs: Vec<RunGrade>,
    /// The first [`MAX_MALFORMED_KEPT`] malformed lines, in reading order.
    pub malformed: Vec<MalformedLine>,
    /// How many lines were malformed, all of them (the first ones are in
    /// [`malformed`](Self::malformed)).
    pub malformed_lines: usize,
}

/// How many runs fell in each category.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GradeTotals {
    /// All runs.
    pub runs: usize,
    /// `clean` runs.
    pub clean: usize,
    /// `tool_error_recovered` runs.
    pub tool_error_recovered: usize,
    /// `tool_error_unrecovered` runs.
    pub tool_error_unrecovered: usize,
    /// `incomplete` runs.
    pub incomplete: usize,
    /// `unreadable` runs.
    pub unreadable: usize,
    /// Lines skipped as malformed.
    pub malformed_lines: usize,
}

impl GradeTotals {
    /// The count of `category`.
    pub fn count(&self, category: Category) -> usize {
        match category {
            Category::Unreadable => self.unreadable,
            Category::Incomplete => self.incomplete,
            Category::ToolErrorUnrecovered => self.tool_error_unrecovered,
            Category::ToolErrorRecovered => self.tool_error_recovered,
            Category::Clean => self.clean,
        }
    }
}

impl GradeReport {
    /// The counts per category.
    pub fn totals(&self) -> GradeTotals {
        let mut totals =
            GradeTotals { runs: self.runs.len(), malformed_lines: self.malformed_lines, ..GradeTotals::default() };
        for run in &self.runs {
            match run.category {
                Category::Unreadable => totals.unreadable += 1,
                Category::Incomplete => totals.incomplete += 1,
                Category::ToolErrorUnrecovered => totals.tool_error_unrecovered += 1,
                Category::ToolErrorRecovered => totals.tool_error_recovered += 1,
                Category::Clean => totals.clean += 1,
            }
        }
        totals
    }

    /// The grade of the run `run_id`.
    pub fn run(&self, run_id: &str) -> Option<&RunGrade> {
        self.runs.iter().find(|run| run.run_id == run_id)
    }
}

/// How much memory a [`Grader`] spends on the runs it tracks, at most, by default: 256 MiB.
///
/// A run costs about 300 bytes and its id twice, a tool call 16 bytes (and its call id while it
/// waits for its result), so 256 MiB holds about a million runs or ten million tool calls: more
/// than a day of a busy service's traces, and still memory any machine that runs the grader can
/// spare. Past it, [`Grader::read`] stops with an error rather than let hostile or huge input
/// take all the memory there is.
pub const MAX_GRADER_BYTES: usize = 256 * 1024 * 1024;

/// How many malformed lines a [`GradeReport`] keeps with their reasons; the others are counted
/// only. A hundred show what is wrong with a file; a million would be a million lines of noise
/// and memory.
pub const MAX_MALFORMED_KEPT: usize = 100;

/// How long a value from the input may be in a malformed line's reason, in characters.
const MAX_SHOWN_CHARS: usize = 64;

/// Grades the trace lines of `reader` (named `<trace>` in malformed-line reports).
///
/// # Errors
///
/// As [`Grader::read`].
pub fn grade_lines(reader: impl BufRead) -> io::Result<GradeReport> {
    let mut grader = Grader::new();
    grader.read("<trace>", reader)?;
    Ok(grader.finish())
}

/// Reads traces from several sources (a run may span them) and grades the runs at the end.
///
/// Memory stays bounded whatever the input: a line is read up to
/// [`MAX_LINE_BYTES`](crate::util::lines::MAX_LINE_BYTES) (a longer one
/// is malformed and skipped without being held), the runs are tracked up to [`MAX_GRADER_BYTES`]
/// (see [`with_memory_limit`](Self::with_memory_limit)), and [`MAX_MALFORMED_KEPT`] malformed
/// lines are kept.
///
/// # Examples
///
/// ```
/// use agentic_runtime::observe::trace::grade::{Category, Grader};
///
/// let mut grader = Grader::new();
/// grader.read("one.jsonl", r#"{"event":"agent_start","run_id":"r"}"#.as_bytes())?;
/// grader.read("two.jsonl", r#"{"event":"agent_finish","run_id":"r","final_text":"ok"}"#.as_bytes())?;
/// let report = grader.finish();
/// assert_eq!(report.runs[0].category, Category::Clean);
/// assert_eq!(report.runs[0].source, "one.jsonl");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Grader {
    runs: Vec<Run>,
    index: HashMap<String, usize>,
    /// The sources read, in order; a run names its own by position.
    sources: Vec<String>,
    malformed: Vec<MalformedLine>,
    malformed_lines: usize,
    tool_calls: usize,
    /// How many skipped lines named no run (they count against the runs open when read).
    unattributed: usize,
    /// An estimate of the memory the runs hold, checked against `max_bytes`.
    bytes: usize,
    max_bytes: usize,
}

impl Default for Grader {
    fn default() -> Self {
        Self {
            runs: Vec::new(),
            index: HashMap::new(),
            sources: Vec::new(),
            malformed: Vec::new(),
            malformed_lines: 0,
            tool_calls: 0,
            unattributed: 0,
            bytes: 0,
            max_bytes: MAX_GRADER_BYTES,
        }
    }
}

/// The memory a run takes besides its strings: the run itself and its index entry.
const RUN_COST: usize = 320;
/// The memory a distinct tool of a run takes besides its name (held twice).
const TOOL_COST: usize = 96;
/// The memory a tool call takes.
const CALL_COST: usize = std::mem::size_of::<Call>();
/// The memory a call id waiting for its result takes besides the id.
const PENDING_COST: usize = 96;

#[derive(Debug)]
struct Run {
    run_id: String,
    source: usize,
    function: Option<String>,
    finished: bool,
    iterations: Option<u64>,
    compactions: usize,
    /// The distinct tools called, in order of first appearance, and their positions.
    tools: Vec<String>,
    tool_index: HashMap<String, usize>,
    calls: Vec<Call>,
    /// The calls waiting for their result, by call id, latest last.
    pending: HashMap<String, Vec<usize>>,
    /// The skipped lines that named this run.
    skipped: usize,
    /// [`Grader::unattributed`] when the run was first seen, and at its (latest) `agent_finish`:
    /// the skipped lines that named no run in between may be its own.
    unattributed_at_start: usize,
    unattributed_at_finish: Option<usize>,
}

#[derive(Debug)]
struct Call {
    /// The position of its tool in `Run::tools`.
    tool: usize,
    /// `Some(is_error)` once answered.
    result: Option<bool>,
}

/// What a line is, once checked.
enum Line {
    Start { function: Option<String> },
    Call { tool: String, call_id: String },
    Result { call_id: String, is_error: bool, tool: Option<String> },
    Compaction,
    Finish { iterations: Option<u64> },
}

impl Grader {
    /// A grader that has read nothing, bounded by [`MAX_GRADER_BYTES`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The same grader, with at most `bytes` of memory for the runs it tracks (an estimate:
    /// strings by their length, each run, tool and call by a fixed cost).
    pub fn with_memory_limit(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Reads the lines of `reader`; `source` names it in reports (a file name).
    ///
    /// # Errors
    ///
    /// If reading fails, or, with an error of kind [`io::ErrorKind::OutOfMemory`], when the runs
    /// read would take more than the memory limit; its message names the line and says how to go
    /// on. The lines read before either are kept.
    pub fn read(&mut self, source: &str, reader: impl BufRead) -> io::Result<()> {
        let source_index = self.sources.len();
        self.sources.push(source.to_owned());
        self.bytes = self.bytes.saturating_add(source.len());
        let head = Rc::new(RefCell::new(LineHead::default()));
        let mut lines = BoundedLines::new(HeadKeeper { inner: reader, head: Rc::clone(&head) });
        while let Some(line) = lines.next_line()? {
            match line.bytes {
                Err(too_long) => {
                    let run_id = run_id_in(head.borrow().of_last(line.ended));
                    self.skipped(source_index, line.number, too_long.to_string(), run_id)?;
                }
                Ok(bytes) => match std::str::from_utf8(bytes) {
                    Ok(text) => self.line(source_index, line.number, text)?,
                    Err(_) => self.skipped(source_index, line.number, "not UTF-8".to_owned(), run_id_in(bytes))?,
                },
            }
        }
        Ok(())
    }

    /// A line skipped for `reason`: reported, and counted against the run `run_id` names, or,
    /// when it names none, against every run open now.
    fn skipped(&mut self, source: usize, line: usize, reason: String, run_id: Option<String>) -> io::Result<()> {
        self.malformed_lines += 1;
        if self.malformed.len() < MAX_MALFORMED_KEPT {
            self.malformed.push(MalformedLine { source: self.sources[source].clone(), line, reason });
        }
        match run_id {
            Some(run_id) => {
                let position = self.index.get(&run_id).copied();
                self.spend(if position.is_none() { RUN_COST + 2 * run_id.len() } else { 0 }, source, line)?;
                let position = position.unwrap_or_else(|| self.add_run(run_id, source));
                self.runs[position].skipped += 1;
            }
            None => self.unattributed += 1,
        }
        Ok(())
    }

    /// Starts tracking the run `run_id`, first seen in `source`; its position.
    fn add_run(&mut self, run_id: String, source: usize) -> usize {
        self.index.insert(run_id.clone(), self.runs.len());
        self.runs.push(Run::new(run_id, source, self.unattributed));
        self.runs.len() - 1
    }

    fn line(&mut self, source: usize, number: usize, text: &str) -> io::Result<()> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(());
        }
        let (run_id, line) = match parse(text) {
            Ok(parsed) => parsed,
            Err(reason) => return self.skipped(source, number, reason, run_id_in(text.as_bytes())),
        };
        let position = self.index.get(&run_id).copied();
        self.spend(self.cost(position, &line, &run_id), source, number)?;
        let position = position.unwrap_or_else(|| self.add_run(run_id, source));
        let run = &mut self.runs[position];
        match line {
            Line::Start { function } => {
                if run.function.is_none() {
                    run.function = function;
                }
            }
            Line::Call { tool, call_id } => {
                let tool = run.tool(tool);
                let stack = run.pending.entry(call_id).or_default();
                stack.push(run.calls.len());
                run.calls.push(Call { tool, result: None });
                self.tool_calls += 1;
            }
            Line::Result { call_id, is_error, tool } => self.result(position, &call_id, is_error, tool),
            Line::Compaction => run.compactions += 1,
            Line::Finish { iterations } => {
                run.finished = true;
                run.iterations = iterations;
                run.unattributed_at_finish = Some(self.unattributed);
            }
        }
        Ok(())
    }

    /// A tool result: it answers the latest pending call with its id (whose pending entry, once
    /// drained, frees its memory), or stands for a call the trace did not show.
    fn result(&mut self, position: usize, call_id: &str, is_error: bool, tool: Option<String>) {
        let run = &mut self.runs[position];
        let waiting = run.pending.get_mut(call_id).and_then(|stack| stack.pop().map(|call| (call, stack.is_empty())));
        match waiting {
            Some((call, drained)) => {
                run.calls[call].result = Some(is_error);
                self.bytes = self.bytes.saturating_sub(std::mem::size_of::<usize>());
                if drained {
                    run.pending.remove(call_id);
                    self.bytes = self.bytes.saturating_sub(call_id.len() + PENDING_COST);
                }
            }
            None => {
                let tool = run.tool(tool.unwrap_or_else(|| "(unknown tool)".to_owned()));
                run.calls.push(Call { tool, result: Some(is_error) });
                self.tool_calls += 1;
            }
        }
    }

    /// The memory `line` adds: a new run, a function name, a new tool, a call and its pending id.
    fn cost(&self, position: Option<usize>, line: &Line, run_id: &str) -> usize {
        let run = position.map(|position| &self.runs[position]);
        let new_run = if run.is_none() { RUN_COST + 2 * run_id.len() } else { 0 };
        let new_tool = |tool: &str| {
            if run.is_some_and(|run| run.tool_index.contains_key(tool)) { 0 } else { TOOL_COST + 2 * tool.len() }
        };
        let line_cost = match line {
            Line::Start { function } => match (run.and_then(|run| run.function.as_ref()), function) {
                (None, Some(function)) => function.len(),
                _ => 0,
            },
            Line::Call { tool, call_id } => {
                let new_id = if run.is_some_and(|run| run.pending.contains_key(call_id)) {
                    0
                } else {
                    call_id.len() + PENDING_COST
                };
                new_tool(tool) + CALL_COST + std::mem::size_of::<usize>() + new_id
            }
            Line::Result { call_id, tool, .. } => {
                if run.is_some_and(|run| run.pending.contains_key(call_id)) {
                    0
                } else {
                    new_tool(tool.as_deref().unwrap_or("(unknown tool)")) + CALL_COST
                }
            }
            Line::Finish { .. } | Line::Compaction => 0,
        };
        new_run + line_cost
    }

    /// Counts `bytes` more, or refuses them when they would pass the limit.
    fn spend(&mut self, bytes: usize, source: usize, number: usize) -> io::Result<()> {
        let total = self.bytes.saturating_add(bytes);
        if total > self.max_bytes {
            return Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!(
                    "{}:{number}: the runs read so far would take more than {} of memory to track \
                     ({} runs, {} tool calls); grade the traces in parts, each run's lines in one part",
                    self.sources[source],
                    bytes_text(self.max_bytes),
                    self.runs.len(),
                    self.tool_calls
                ),
            ));
        }
        self.bytes = total;
        Ok(())
    }

    /// The grades of every run read, and the malformed lines.
    pub fn finish(self) -> GradeReport {
        let sources = self.sources;
        let unattributed = self.unattributed;
        let runs = self.runs.into_iter().map(|run| grade(run, &sources, unattributed)).collect();
        GradeReport { runs, malformed: self.malformed, malformed_lines: self.malformed_lines }
    }
}

impl Run {
    /// A run with nothing read yet but its id, first seen in source number `source` when
    /// `unattributed` skipped lines had named no run.
    fn new(run_id: String, source: usize, unattributed: usize) -> Self {
        Self {
            run_id,
            source,
            function: None,
            finished: false,
            iterations: None,
            compactions: 0,
            tools: Vec::new(),
            tool_index: HashMap::new(),
            calls: Vec::new(),
            pending: HashMap::new(),
            skipped: 0,
            unattributed_at_start: unattributed,
            unattributed_at_finish: None,
        }
    }

    /// The position of `tool` in `tools`, added if new.
    fn tool(&mut self, tool: String) -> usize {
        if let Some(&position) = self.tool_index.get(&tool) {
            return position;
        }
        self.tools.push(tool.clone());
        self.tool_index.insert(tool, self.tools.len() - 1);
        self.tools.len() - 1
    }
}

fn grade(run: Run, sources: &[String], unattributed: usize) -> RunGrade {
    // A tool is unrecovered when its last answered call (in call order) failed.
    let mut last: Vec<Option<bool>> = vec![None; run.tools.len()];
    let mut order = Vec::new();
    let mut tool_errors = 0;
    for call in &run.calls {
        let Some(is_error) = call.result else { continue };
        tool_errors += usize::from(is_error);
        if last[call.tool].is_none() {
            order.push(call.tool);
        }
        last[call.tool] = Some(is_error);
    }
    let unrecovered_tools: Vec<String> =
        order.into_iter().filter(|&tool| last[tool] == Some(true)).map(|tool| run.tools[tool].clone()).collect();
    let open_until = run.unattributed_at_finish.unwrap_or(unattributed);
    let skipped_lines = run.skipped + open_until.saturating_sub(run.unattributed_at_start);
    let category = if skipped_lines > 0 {
        Category::Unreadable
    } else if !run.finished {
        Category::Incomplete
    } else if !unrecovered_tools.is_empty() {
        Category::ToolErrorUnrecovered
    } else if tool_errors > 0 {
        Category::ToolErrorRecovered
    } else {
        Category::Clean
    };
    RunGrade {
        tool_calls: run.calls.len(),
        tool_errors,
        unrecovered_tools,
        category,
        run_id: run.run_id,
        source: sources[run.source].clone(),
        function: run.function,
        iterations: run.iterations,
        compactions: run.compactions,
        skipped_lines,
    }
}

/// How much of each line [`HeadKeeper`] keeps: room for the `event`, `ts_ms` and `run_id` the
/// runtime writes first.
const HEAD_BYTES: usize = 256;

/// The first [`HEAD_BYTES`] of the line being read and of the line before it.
#[derive(Debug, Default)]
struct LineHead {
    current: Vec<u8>,
    last: Vec<u8>,
}

impl LineHead {
    /// The head of the line just read: it ended with a `\n` (`ended`), or it is the last line.
    fn of_last(&self, ended: bool) -> &[u8] {
        if ended { &self.last } else { &self.current }
    }
}

/// A reader that keeps the start of each line it gives out, so that the run of a line too long to
/// be read can still be told.
struct HeadKeeper<R> {
    inner: R,
    head: Rc<RefCell<LineHead>>,
}

impl<R: io::Read> io::Read for HeadKeeper<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}

impl<R: BufRead> BufRead for HeadKeeper<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        // What is consumed was just given by `fill_buf`, so asking again reads nothing.
        if let Ok(buffer) = self.inner.fill_buf() {
            let mut head = self.head.borrow_mut();
            let mut rest = &buffer[..amount.min(buffer.len())];
            while !rest.is_empty() {
                let newline = rest.iter().position(|&byte| byte == b'\n');
                let part = &rest[..newline.unwrap_or(rest.len())];
                let room = HEAD_BYTES.saturating_sub(head.current.len());
                head.current.extend_from_slice(&part[..part.len().min(room)]);
                match newline {
                    Some(at) => {
                        head.last = std::mem::take(&mut head.current);
                        rest = &rest[at + 1..];
                    }
                    None => rest = &[],
                }
            }
        }
        self.inner.consume(amount);
    }
}

/// The `run_id` a line's text names, found without parsing it as JSON (it may be cut or broken):
/// the string after the first `"run_id":` outside a string; `None` when there is none, or it holds
/// an escape or is cut.
fn run_id_in(text: &[u8]) -> Option<String> {
    const KEY: &[u8] = b"\"run_id\"";
    let at = text.windows(KEY.len()).position(|window| window == KEY)?;
    let rest = text[at + KEY.len()..].trim_ascii_start().strip_prefix(b":")?.trim_ascii_start().strip_prefix(b"\"")?;
    let end = rest.iter().position(|&byte| byte == b'"' || byte == b'\\')?;
    if rest[end] != b'"' {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok().map(str::to_owned)
}

/// A value from the input as a reason shows it: its JSON, shortened.
fn shown(value: &Value) -> String {
    shorten(&value.to_string(), MAX_SHOWN_CHARS).into_owned()
}

/// The run id and the checked content of one line, or why it is malformed.
fn parse(text: &str) -> Result<(String, Line), String> {
    let value: Value = serde_json::from_str(text).map_err(|error| format!("not JSON: {error}"))?;
    let Value::Object(object) = value else {
        return Err("not a JSON object".to_owned());
    };
    let string = |key: &str| -> Result<String, String> {
        match object.get(key) {
            Some(Value::String(text)) => Ok(text.clone()),
            Some(Value::Number(number)) if key.ends_with("_id") => Ok(number.to_string()),
            Some(other) => Err(format!("`{key}` must be a string, not {}", shown(other))),
            None => Err(format!("no `{key}`")),
        }
    };
    let event = string("event")?;
    let run_id = string("run_id")?;
    let line = match event.as_str() {
        "agent_start" => Line::Start { function: object.get("function").and_then(Value::as_str).map(str::to_owned) },
        "tool_call" => Line::Call { tool: string("tool")?, call_id: string("call_id")? },
        "tool_result" => {
            let is_error = match object.get("is_error").or_else(|| object.get("error")) {
                Some(Value::Bool(is_error)) => *is_error,
                Some(other) => return Err(format!("`is_error` must be true or false, not {}", shown(other))),
                None => return Err("no `is_error`".to_owned()),
            };
            Line::Result { call_id: string("call_id")?, is_error, tool: string("tool").ok() }
        }
        "compaction" => Line::Compaction,
        "agent_finish" => Line::Finish { iterations: object.get("iterations").and_then(Value::as_u64) },
        other => {
            return Err(format!(
                "unknown event `{}`; the events are `agent_start`, `tool_call`, `tool_result`, `compaction`, `agent_finish`",
                shorten(other, MAX_SHOWN_CHARS)
            ));
        }
    };
    Ok((run_id, line))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grade_text(text: &str) -> GradeReport {
        grade_lines(text.as_bytes()).unwrap()
    }

    #[test]
    fn the_eighty_percent_failure_run_is_unrecovered() {
        let report = grade_text(
            r#"{"event":"agent_start","ts_ms":0,"run_id":"r","function":"support"}
{"event":"tool_call","ts_ms":1,"run_id":"r","tool":"lookup","call_id":"1","arguments":{}}
{"event":"tool_result","ts_ms":2,"run_id":"r","call_id":"1","error":true,"content":"InternalServerError"}
{"event":"tool_call","ts_ms":3000,"run_id":"r","tool":"lookup","call_id":"2","arguments":{}}
{"event":"tool_result","ts_ms":3001,"run_id":"r","call_id":"2","error":true,"content":"InternalServerError"}
{"event":"agent_finish","ts_ms":6000,"run_id":"r","final_text":"Sorry.","iterations":3}
"#,
        );
        let run = &report.runs[0];
        assert_eq!(run.category, Category::ToolErrorUnrecovered);
        assert_eq!((run.tool_calls, run.tool_errors, run.iterations), (2, 2, Some(3)));
        assert_eq!(run.unrecovered_tools, ["lookup"]);
        assert_eq!(run.function.as_deref(), Some("support"));
        assert!(report.malformed.is_empty());
    }

    #[test]
    fn compactions_are_counted_and_change_no_category() {
        let report = grade_text(
            r#"{"event":"agent_start","ts_ms":0,"run_id":"r"}
{"event":"compaction","ts_ms":1,"run_id":"r","compactor":"drop_oldest","before":7,"after":3}
{"event":"compaction","ts_ms":2,"run_id":"r","compactor":"drop_oldest","before":5,"after":3}
{"event":"agent_finish","ts_ms":3,"run_id":"r","final_text":"Done.","iterations":3}
"#,
        );
        let run = &report.runs[0];
        assert_eq!((run.category, run.compactions), (Category::Clean, 2));
        assert!(report.malformed.is_empty(), "{:?}", report.malformed);
    }

    #[test]
    fn recovery_is_per_tool_and_needs_a_later_success() {
        let line = |run: &str, event: &str, rest: &str| format!(r#"{{"event":"{event}","run_id":"{run}"{rest}}}"#);
        let call =
            |run: &str, id: &str, tool: &str| line(run, "tool_call", &format!(r#","tool":"{tool}","call_id":"{id}""#));
        let result = |run: &str, id: &str, error: bool| {
            line(run, "tool_result", &format!(r#","call_id":"{id}","is_error":{error}"#))
        };
        let finish = |run: &str| line(run, "agent_finish", r#","final_text":"x""#);
        let text = [
            // success then error of the same tool: unrecovered
            call("a", "1", "t"),
            result("a", "1", false),
            call("a", "2", "t"),
            result("a", "2", true),
            finish("a"),
            // an error of `u` and a success of another tool: unrecovered
            call("b", "1", "u"),
            result("b", "1", true),
            call("b", "2", "v"),
            result("b", "2", false),
            finish("b"),
            // the same call id reused across turns, error then success: recovered
            call("c", "call_1", "t"),
            result("c", "call_1", true),
            call("c", "call_1", "t"),
            result("c", "call_1", false),
            finish("c"),
            // no tools at all: clean
            finish("d"),
            // an error and no finish: incomplete
            call("e", "1", "t"),
            result("e", "1", true),
            // a result without its call, with a tool name: counted
            line("f", "tool_result", r#","call_id":"9","is_error":true,"tool":"w""#),
            finish("f"),
        ]
        .join("\n");
        let report = grade_text(&text);
        let got: Vec<(&str, Category)> = report.runs.iter().map(|run| (run.run_id.as_str(), run.category)).collect();
        assert_eq!(
            got,
            [
                ("a", Category::ToolErrorUnrecovered),
                ("b", Category::ToolErrorUnrecovered),
                ("c", Category::ToolErrorRecovered),
                ("d", Category::Clean),
                ("e", Category::Incomplete),
                ("f", Category::ToolErrorUnrecovered),
            ]
        );
        assert_eq!(report.run("f").unwrap().unrecovered_tools, ["w"]);
        let totals = report.totals();
        assert_eq!(
            (totals.runs, totals.clean, totals.tool_error_recovered, totals.tool_error_unrecovered, totals.incomplete),
            (6, 1, 1, 3, 1)
        );
    }

    #[test]
    fn malformed_lines_are_reported_and_skipped() {
        let mut grader = Grader::new();
        let text = "\n[1]\n{\"event\":\"agent_start\"}\n{\"event\":\"llm_call\",\"run_id\":\"r\"}\n\
            {\"event\":\"tool_call\",\"run_id\":\"r\",\"call_id\":\"1\"}\n\
            {\"event\":\"tool_result\",\"run_id\":\"r\",\"call_id\":\"1\",\"is_error\":\"yes\"}\n\
            {\"event\":\"agent_finish\",\"run_id\":\"r\"}\n";
        grader.read("t.jsonl", text.as_bytes()).unwrap();
        grader.read("u.jsonl", &b"\xff\xfe\n"[..]).unwrap();
        let report = grader.finish();
        let reasons: Vec<String> = report.malformed.iter().map(ToString::to_string).collect();
        assert_eq!(
            reasons,
            [
                "t.jsonl:2: not a JSON object",
                "t.jsonl:3: no `run_id`",
                "t.jsonl:4: unknown event `llm_call`; the events are `agent_start`, `tool_call`, `tool_result`, `compaction`, `agent_finish`",
                "t.jsonl:5: no `tool`",
                "t.jsonl:6: `is_error` must be true or false, not \"yes\"",
                "u.jsonl:1: not UTF-8",
            ]
        );
        assert_eq!(report.runs.len(), 1);
        assert_eq!((report.runs[0].category, report.runs[0].skipped_lines), (Category::Unreadable, 3));
    }

    #[test]
    fn an_over_long_line_is_malformed_and_the_next_lines_are_graded() {
        let mut text = vec![b'['; crate::util::lines::MAX_LINE_BYTES + 1];
        text.extend_from_slice(b"\n{\"event\":\"agent_finish\",\"run_id\":\"r\"}\n");
        let report = grade_lines(&text[..]).unwrap();
        let reasons: Vec<String> = report.malformed.iter().map(ToString::to_string).collect();
        assert_eq!(reasons, ["<trace>:1: longer than 1 MiB (the limit for one line); it was skipped"]);
        assert_eq!(report.runs[0].category, Category::Clean, "the line came before the run started");
    }

    #[test]
    fn an_over_long_line_counts_against_the_run_it_starts_with() {
        let content = "x".repeat(crate::util::lines::MAX_LINE_BYTES);
        for ending in ["\n", ""] {
            let text = format!(
                "{{\"event\":\"agent_start\",\"run_id\":\"a\"}}\n{{\"event\":\"agent_start\",\"run_id\":\"b\"}}\n\
                 {{\"event\":\"agent_finish\",\"run_id\":\"b\"}}\n{{\"event\":\"agent_finish\",\"run_id\":\"a\"}}\n\
                 {{\"event\":\"tool_result\",\"ts_ms\":1,\"run_id\" : \"b\",\"call_id\":\"1\",\"is_error\":true,\"content\":\"{content}\"}}{ending}"
            );
            let report = grade_lines(io::BufReader::with_capacity(1000, text.as_bytes())).unwrap();
            let got: Vec<(&str, Category, usize)> =
                report.runs.iter().map(|run| (run.run_id.as_str(), run.category, run.skipped_lines)).collect();
            assert_eq!(got, [("a", Category::Clean, 0), ("b", Category::Unreadable, 1)], "ending {ending:?}");
        }
    }

    #[test]
    fn a_line_that_names_no_run_counts_against_the_runs_open_when_read() {
        let text = r#"{"event":"agent_start","run_id":"done"}
{"event":"agent_finish","run_id":"done"}
{"event":"agent_start","run_id":"open"}
{"event":"agent_start","run_id":"cut"}
{"event":"tool_result","run_id":"cut","call_id":"1","is_er
{"event":"tool_result","call_
{"event":"agent_finish","run_id":"open"}
{"event":"agent_finish","run_id":"cut"}
{"event":"agent_start","run_id":"later"}
{"event":"agent_finish","run_id":"later"}
"#;
        let report = grade_lines(text.as_bytes()).unwrap();
        let got: Vec<(&str, Category, usize)> =
            report.runs.iter().map(|run| (run.run_id.as_str(), run.category, run.skipped_lines)).collect();
        assert_eq!(
            got,
            [
                ("done", Category::Clean, 0),
                ("open", Category::Unreadable, 1),
                ("cut", Category::Unreadable, 2),
                ("later", Category::Clean, 0),
            ]
        );
        assert_eq!((report.malformed_lines, report.totals().unreadable), (2, 2));
    }

    #[test]
    fn run_ids_are_found_in_broken_text_only_when_whole() {
        assert_eq!(run_id_in(br#"{"event":"x","run_id": "r-1","con"#).as_deref(), Some("r-1"));
        assert_eq!(run_id_in(br#"{"content":"\"run_id\":\"no\"","run_id":"yes"}"#).as_deref(), Some("yes"));
        assert_eq!(run_id_in(br#"{"run_id":"cut-sho"#), None);
        assert_eq!(run_id_in(br#"{"run_id":"a\"b"}"#), None);
        assert_eq!(run_id_in(br#"{"run_id":7}"#), None);
    }

    #[test]
    fn values_from_the_input_are_shortened_in_reasons() {
        let long = "x".repeat(100_000);
        let text = format!(
            "{{\"event\":\"{long}\",\"run_id\":\"r\"}}\n{{\"event\":\"agent_start\",\"run_id\":[\"{long}\"]}}\n"
        );
        let report = grade_text(&text);
        let reasons: Vec<&str> = report.malformed.iter().map(|line| line.reason.as_str()).collect();
        let x64 = "x".repeat(64);
        let x62 = "x".repeat(62);
        assert_eq!(
            reasons,
            [
                format!(
                    "unknown event `{x64}…`; the events are `agent_start`, `tool_call`, `tool_result`, `compaction`, `agent_finish`"
                ),
                format!("`run_id` must be a string, not [\"{x62}…"),
            ]
        );
    }

    #[test]
    fn only_the_first_malformed_lines_are_kept_and_all_are_counted() {
        let report = grade_text(&"nope\n".repeat(MAX_MALFORMED_KEPT + 50));
        assert_eq!(report.malformed.len(), MAX_MALFORMED_KEPT);
        assert_eq!(report.malformed_lines, MAX_MALFORMED_KEPT + 50);
        assert_eq!(report.totals().malformed_lines, MAX_MALFORMED_KEPT + 50);
    }

    #[test]
    fn the_memory_limit_stops_reading_with_a_clear_error() {
        let runs: String =
            (0..100).map(|run| format!("{{\"event\":\"agent_start\",\"run_id\":\"run-{run}\"}}\n")).collect();
        let mut grader = Grader::new().with_memory_limit(4096);
        let error = grader.read("many.jsonl", runs.as_bytes()).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::OutOfMemory);
        assert_eq!(
            error.to_string(),
            "many.jsonl:13: the runs read so far would take more than 4 KiB of memory to track \
             (12 runs, 0 tool calls); grade the traces in parts, each run's lines in one part"
        );
        assert_eq!(grader.finish().runs.len(), 12);
    }

    #[test]
    fn answered_calls_give_their_memory_back() {
        // A million calls answered one by one stay within a small limit: only waiting ids cost.
        let mut grader = Grader::new().with_memory_limit(RUN_COST + 2 + TOOL_COST + 2 + 1000 + 100_000 * CALL_COST);
        let pairs: String = (0..100_000)
            .map(|call| {
                format!(
                    "{{\"event\":\"tool_call\",\"run_id\":\"r\",\"tool\":\"t\",\"call_id\":\"{call}\"}}\n\
                     {{\"event\":\"tool_result\",\"run_id\":\"r\",\"call_id\":\"{call}\",\"is_error\":false}}\n"
                )
            })
            .collect();
        grader.read("calls.jsonl", pairs.as_bytes()).unwrap();
        let report = grader.finish();
        assert_eq!((report.runs[0].tool_calls, report.runs[0].tool_errors), (100_000, 0));
    }

    #[test]
    fn a_result_answers_the_latest_waiting_call_with_its_id_in_call_order() {
        let line = |rest: &str| format!("{{\"run_id\":\"r\",{rest}}}");
        let text = [
            line(r#""event":"tool_call","tool":"t","call_id":"1""#),
            line(r#""event":"tool_call","tool":"t","call_id":"2""#),
            line(r#""event":"tool_result","call_id":"2","is_error":false"#),
            line(r#""event":"tool_result","call_id":"1","is_error":true"#),
            line(r#""event":"agent_finish""#),
        ]
        .join("\n");
        // The last call of `t` (call 2) succeeded: recovered, whatever order the results came in.
        assert_eq!(grade_text(&text).runs[0].category, Category::ToolErrorRecovered);
    }
}
