//! The grader: reads JSONL traces and puts every run in one category.
//!
//! | category | when |
//! | --- | --- |
//! | `incomplete` | the run has no `agent_finish` (its retry layers gave up, or it was cut short) |
//! | `tool_error_unrecovered` | some tool returned an error and no later call of that same tool succeeded |
//! | `tool_error_recovered` | some tool returned an error, and every such error was followed by a successful call of the same tool |
//! | `clean` | no tool returned an error |
//!
//! The first matching row wins. Events are grouped by `run_id`, across all the sources read; the
//! order of calls is the order of their `tool_call` lines (a `tool_result` is matched to the
//! latest unanswered `tool_call` with its `call_id`; a result without a call counts as a call of
//! its `tool`, at its own place). A line that is not JSON, not an object, has an unknown `event`
//! or lacks a field its event needs (`run_id` always; `tool` and `call_id` for `tool_call`;
//! `call_id` and `is_error` (or `error`) for `tool_result`) is reported as malformed, with its
//! source and line number, and skipped. Blank lines are skipped silently; `ts_ms` and the other
//! fields are not needed to grade.
//!
//! # Examples
//!
//! ```
//! use agentic_runtime::trace::grade::{Category, grade_lines};
//!
//! let trace = r#"
//! {"event":"agent_start","run_id":"a","function":"weather"}
//! {"event":"tool_call","run_id":"a","tool":"get_weather","call_id":"1","arguments":{}}
//! {"event":"tool_result","run_id":"a","call_id":"1","is_error":true,"content":"RateLimitError: 429"}
//! {"event":"tool_call","run_id":"a","tool":"get_weather","call_id":"2","arguments":{}}
//! {"event":"tool_result","run_id":"a","call_id":"2","is_error":false,"content":"sunny"}
//! {"event":"agent_finish","run_id":"a","final_text":"Sunny.","iterations":3}
//! {"event":"agent_start","run_id":"b","function":"weather"}
//! not json
//! "#;
//! let report = grade_lines(trace.as_bytes()).unwrap();
//! assert_eq!(report.runs[0].category, Category::ToolErrorRecovered);
//! assert_eq!(report.runs[1].category, Category::Incomplete);
//! assert_eq!(report.malformed[0].to_string(), "<trace>:9: not JSON: expected ident at line 1 column 2");
//! let totals = report.totals();
//! assert_eq!((totals.runs, totals.tool_error_recovered, totals.incomplete), (2, 1, 1));
//! ```

use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufRead};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a run is graded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Category {
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
    pub const ALL: [Category; 4] =
        [Category::Incomplete, Category::ToolErrorUnrecovered, Category::ToolErrorRecovered, Category::Clean];

    /// The name: `incomplete`, `tool_error_unrecovered`, `tool_error_recovered`, `clean`.
    pub const fn name(self) -> &'static str {
        match self {
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
    /// The malformed lines, in reading order.
    pub malformed: Vec<MalformedLine>,
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
    /// Lines skipped as malformed.
    pub malformed_lines: usize,
}

impl GradeTotals {
    /// The count of `category`.
    pub fn count(&self, category: Category) -> usize {
        match category {
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
            GradeTotals { runs: self.runs.len(), malformed_lines: self.malformed.len(), ..GradeTotals::default() };
        for run in &self.runs {
            match run.category {
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

/// Grades the trace lines of `reader` (named `<trace>` in malformed-line reports).
///
/// # Errors
///
/// If reading fails (a line that is not UTF-8 is malformed, not an error).
pub fn grade_lines(reader: impl BufRead) -> io::Result<GradeReport> {
    let mut grader = Grader::new();
    grader.read("<trace>", reader)?;
    Ok(grader.finish())
}

/// Reads traces from several sources (a run may span them) and grades the runs at the end.
///
/// # Examples
///
/// ```
/// use agentic_runtime::trace::grade::{Category, Grader};
///
/// let mut grader = Grader::new();
/// grader.read("one.jsonl", r#"{"event":"agent_start","run_id":"r"}"#.as_bytes())?;
/// grader.read("two.jsonl", r#"{"event":"agent_finish","run_id":"r","final_text":"ok"}"#.as_bytes())?;
/// let report = grader.finish();
/// assert_eq!(report.runs[0].category, Category::Clean);
/// assert_eq!(report.runs[0].source, "one.jsonl");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct Grader {
    runs: Vec<Run>,
    index: HashMap<String, usize>,
    malformed: Vec<MalformedLine>,
}

#[derive(Debug)]
struct Run {
    run_id: String,
    source: String,
    function: Option<String>,
    finished: bool,
    iterations: Option<u64>,
    calls: Vec<Call>,
}

#[derive(Debug)]
struct Call {
    call_id: String,
    tool: String,
    /// `Some(is_error)` once answered.
    result: Option<bool>,
}

/// What a line is, once checked.
enum Line {
    Start { function: Option<String> },
    Call { tool: String, call_id: String },
    Result { call_id: String, is_error: bool, tool: Option<String> },
    Finish { iterations: Option<u64> },
}

impl Grader {
    /// A grader that has read nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the lines of `reader`; `source` names it in reports (a file name).
    ///
    /// # Errors
    ///
    /// If reading fails; the lines read before the failure are kept.
    pub fn read(&mut self, source: &str, mut reader: impl BufRead) -> io::Result<()> {
        let mut buffer = Vec::new();
        let mut number = 0;
        loop {
            buffer.clear();
            if reader.read_until(b'\n', &mut buffer)? == 0 {
                return Ok(());
            }
            number += 1;
            match std::str::from_utf8(&buffer) {
                Ok(text) => self.line(source, number, text),
                Err(_) => self.malformed(source, number, "not UTF-8".to_owned()),
            }
        }
    }

    fn malformed(&mut self, source: &str, line: usize, reason: String) {
        self.malformed.push(MalformedLine { source: source.to_owned(), line, reason });
    }

    fn line(&mut self, source: &str, number: usize, text: &str) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let (run_id, line) = match parse(text) {
            Ok(parsed) => parsed,
            Err(reason) => return self.malformed(source, number, reason),
        };
        let position = *self.index.entry(run_id.clone()).or_insert_with(|| {
            self.runs.push(Run {
                run_id,
                source: source.to_owned(),
                function: None,
                finished: false,
                iterations: None,
                calls: Vec::new(),
            });
            self.runs.len() - 1
        });
        let run = &mut self.runs[position];
        match line {
            Line::Start { function } => {
                if run.function.is_none() {
                    run.function = function;
                }
            }
            Line::Call { tool, call_id } => run.calls.push(Call { call_id, tool, result: None }),
            Line::Result { call_id, is_error, tool } => {
                match run.calls.iter_mut().rev().find(|call| call.call_id == call_id && call.result.is_none()) {
                    Some(call) => call.result = Some(is_error),
                    None => run.calls.push(Call {
                        call_id,
                        tool: tool.unwrap_or_else(|| "(unknown tool)".to_owned()),
                        result: Some(is_error),
                    }),
                }
            }
            Line::Finish { iterations } => {
                run.finished = true;
                run.iterations = iterations;
            }
        }
    }

    /// The grades of every run read, and the malformed lines.
    pub fn finish(self) -> GradeReport {
        let runs = self.runs.into_iter().map(grade).collect();
        GradeReport { runs, malformed: self.malformed }
    }
}

fn grade(run: Run) -> RunGrade {
    let answered = || run.calls.iter().filter_map(|call| call.result.map(|is_error| (call.tool.as_str(), is_error)));
    let tool_errors = answered().filter(|(_, is_error)| *is_error).count();
    // A tool is unrecovered when its last answered call failed.
    let mut last: Vec<(&str, bool)> = Vec::new();
    for (tool, is_error) in answered() {
        match last.iter_mut().find(|(name, _)| *name == tool) {
            Some(entry) => entry.1 = is_error,
            None => last.push((tool, is_error)),
        }
    }
    let unrecovered_tools: Vec<String> =
        last.iter().filter(|(_, is_error)| *is_error).map(|(tool, _)| (*tool).to_owned()).collect();
    let category = if !run.finished {
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
        source: run.source,
        function: run.function,
        iterations: run.iterations,
    }
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
            Some(other) => Err(format!("`{key}` must be a string, not {other}")),
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
                Some(other) => return Err(format!("`is_error` must be true or false, not {other}")),
                None => return Err("no `is_error`".to_owned()),
            };
            Line::Result { call_id: string("call_id")?, is_error, tool: string("tool").ok() }
        }
        "agent_finish" => Line::Finish { iterations: object.get("iterations").and_then(Value::as_u64) },
        other => {
            return Err(format!(
                "unknown event `{other}`; the events are `agent_start`, `tool_call`, `tool_result`, `agent_finish`"
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
    fn the_seeds_eighty_percent_failure_run_is_unrecovered() {
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
                "t.jsonl:4: unknown event `llm_call`; the events are `agent_start`, `tool_call`, `tool_result`, `agent_finish`",
                "t.jsonl:5: no `tool`",
                "t.jsonl:6: `is_error` must be true or false, not \"yes\"",
                "u.jsonl:1: not UTF-8",
            ]
        );
        assert_eq!(report.runs.len(), 1);
        assert_eq!(report.runs[0].category, Category::Clean);
    }
}
