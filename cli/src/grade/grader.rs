//! The grader: reads JSONL traces and puts every run in one category ([`run`](mod@super::run) has
//! the rules).
//!
//! Events are grouped by `run_id`, across all the sources read. A line the grader cannot use
//! (see [`line`](mod@super::line)) is reported as malformed, with its source and line number, and
//! skipped. Blank lines are skipped silently. A line longer than
//! [`MAX_LINE_BYTES`](crate::lines::MAX_LINE_BYTES) is malformed too, and skipped without being
//! held in memory; the runs tracked may take up to [`MAX_GRADER_BYTES`] (so that no input, however
//! large, takes all the memory there is).
//!
//! A skipped line still counts against its run, which is graded `unreadable`: the line could have
//! been its failed tool result or its `agent_finish`. The run is the one its `run_id` names, read
//! from the line's text when it is not valid JSON, and from the start of an over-long line (the
//! runtime writes `run_id` third, in the first hundred bytes); a skipped line whose run cannot be
//! told counts against every run that had started and not finished when it was read.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{self, BufRead};
use std::rc::Rc;

use super::head::{HeadKeeper, LineHead};
use super::line::{parse, run_id_in};
use super::report::{GradeReport, MAX_MALFORMED_KEPT, MalformedLine};
use super::run::Run;
use crate::lines::BoundedLines;
use crate::text::bytes_text;

/// How much memory a [`Grader`] spends on the runs it tracks, at most, in `agentic grade`: 256 MiB.
///
/// A run costs about 300 bytes and its id twice, a tool call 16 bytes (and its call id while it
/// waits for its result), so 256 MiB holds about a million runs or ten million tool calls: more
/// than a day of a busy service's traces, and still memory any machine that runs the grader can
/// spare. Past it, [`Grader::read`] stops with an error rather than let hostile or huge input
/// take all the memory there is.
pub(crate) const MAX_GRADER_BYTES: usize = 256 * 1024 * 1024;

/// Reads traces from several sources (a run may span them) and grades the runs at the end.
///
/// Memory stays bounded whatever the input: a line is read up to
/// [`MAX_LINE_BYTES`](crate::lines::MAX_LINE_BYTES) (a longer one is malformed and skipped without
/// being held), the runs are tracked up to the memory limit it is made with, and
/// [`MAX_MALFORMED_KEPT`] malformed lines are kept.
#[derive(Debug)]
pub(crate) struct Grader {
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

impl Grader {
    /// A grader that has read nothing, with at most `max_bytes` of memory for the runs it tracks
    /// (an estimate: strings by their length, each run, tool and call by a fixed cost).
    pub(crate) fn new(max_bytes: usize) -> Self {
        Self {
            runs: Vec::new(),
            index: HashMap::new(),
            sources: Vec::new(),
            malformed: Vec::new(),
            malformed_lines: 0,
            tool_calls: 0,
            unattributed: 0,
            bytes: 0,
            max_bytes,
        }
    }

    /// Reads the lines of `reader`; `source` names it in reports (a file name).
    ///
    /// # Errors
    ///
    /// If reading fails, or, with an error of kind [`io::ErrorKind::OutOfMemory`], when the runs
    /// read would take more than the memory limit; its message names the line and says how to go
    /// on. The lines read before either are kept.
    pub(crate) fn read(&mut self, source: &str, reader: impl BufRead) -> io::Result<()> {
        let source_index = self.sources.len();
        self.sources.push(source.to_owned());
        self.bytes = self.bytes.saturating_add(source.len());
        let head = Rc::new(RefCell::new(LineHead::default()));
        let mut lines = BoundedLines::new(HeadKeeper::new(reader, Rc::clone(&head)));
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
                self.spend(if position.is_none() { Run::new_cost(&run_id) } else { 0 }, source, line)?;
                let position = position.unwrap_or_else(|| self.add_run(run_id, source));
                self.runs[position].skipped_line();
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
        let cost = match position {
            Some(position) => Run::cost(Some(&self.runs[position]), &line),
            None => Run::new_cost(&run_id) + Run::cost(None, &line),
        };
        self.spend(cost, source, number)?;
        let position = position.unwrap_or_else(|| self.add_run(run_id, source));
        let read = self.runs[position].read(line, self.unattributed);
        self.tool_calls += read.calls;
        self.bytes = self.bytes.saturating_sub(read.freed);
        Ok(())
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
    pub(crate) fn finish(self) -> GradeReport {
        let sources = self.sources;
        let unattributed = self.unattributed;
        let runs = self.runs.into_iter().map(|run| run.grade(&sources, unattributed)).collect();
        GradeReport { runs, malformed: self.malformed, malformed_lines: self.malformed_lines }
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::Category;
    use super::super::run::{CALL_COST, RUN_COST, TOOL_COST};
    use super::*;
    use crate::lines::MAX_LINE_BYTES;

    /// Grades the trace lines of `reader`, named `<trace>`.
    fn grade_lines(reader: impl BufRead) -> io::Result<GradeReport> {
        let mut grader = Grader::new(MAX_GRADER_BYTES);
        grader.read("<trace>", reader)?;
        Ok(grader.finish())
    }

    fn grade_text(text: &str) -> GradeReport {
        grade_lines(text.as_bytes()).unwrap()
    }

    #[test]
    fn a_recovered_an_incomplete_and_an_unreadable_run() {
        let trace = r#"
{"event":"agent_start","run_id":"a","function":"weather"}
{"event":"tool_call","run_id":"a","tool":"get_weather","call_id":"1","arguments":{}}
{"event":"tool_result","run_id":"a","call_id":"1","is_error":true,"content":"RateLimitError: 429"}
{"event":"tool_call","run_id":"a","tool":"get_weather","call_id":"2","arguments":{}}
{"event":"tool_result","run_id":"a","call_id":"2","is_error":false,"content":"sunny"}
{"event":"agent_finish","run_id":"a","final_text":"Sunny.","iterations":3}
{"event":"agent_start","run_id":"b","function":"weather"}
{"event":"agent_start","run_id":"c","function":"weather"}
{"event":"tool_result","run_id":"c","call_id":"1","is_er
{"event":"agent_finish","run_id":"c","final_text":"Done.","iterations":2}
"#;
        let report = grade_text(trace);
        assert_eq!(report.runs[0].category, Category::ToolErrorRecovered);
        assert_eq!(report.runs[1].category, Category::Incomplete);
        assert_eq!((report.runs[2].category, report.runs[2].skipped_lines), (Category::Unreadable, 1));
        assert_eq!(
            report.malformed[0].to_string(),
            "<trace>:10: not JSON: EOF while parsing a string at line 1 column 56"
        );
        let totals = report.totals();
        assert_eq!((totals.runs, totals.tool_error_recovered, totals.incomplete, totals.unreadable), (3, 1, 1, 1));
    }

    #[test]
    fn a_run_may_span_sources() {
        let mut grader = Grader::new(MAX_GRADER_BYTES);
        grader.read("one.jsonl", r#"{"event":"agent_start","run_id":"r"}"#.as_bytes()).unwrap();
        grader.read("two.jsonl", r#"{"event":"agent_finish","run_id":"r","final_text":"ok"}"#.as_bytes()).unwrap();
        let report = grader.finish();
        assert_eq!(report.runs.len(), 1);
        assert_eq!((report.runs[0].category, report.runs[0].source.as_str()), (Category::Clean, "one.jsonl"));
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
    fn compactions_change_no_category() {
        let report = grade_text(
            r#"{"event":"agent_start","ts_ms":0,"run_id":"r"}
{"event":"compaction","ts_ms":1,"run_id":"r","compactor":"drop_oldest","before":7,"after":3}
{"event":"compaction","ts_ms":2,"run_id":"r","compactor":"drop_oldest","before":5,"after":3}
{"event":"agent_finish","ts_ms":3,"run_id":"r","final_text":"Done.","iterations":3}
"#,
        );
        assert_eq!(report.runs[0].category, Category::Clean);
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
        assert_eq!(report.runs[5].unrecovered_tools, ["w"]);
        let totals = report.totals();
        assert_eq!(
            (totals.runs, totals.clean, totals.tool_error_recovered, totals.tool_error_unrecovered, totals.incomplete),
            (6, 1, 1, 3, 1)
        );
    }

    #[test]
    fn malformed_lines_are_reported_and_skipped() {
        let mut grader = Grader::new(MAX_GRADER_BYTES);
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
        let mut text = vec![b'['; MAX_LINE_BYTES + 1];
        text.extend_from_slice(b"\n{\"event\":\"agent_finish\",\"run_id\":\"r\"}\n");
        let report = grade_lines(&text[..]).unwrap();
        let reasons: Vec<String> = report.malformed.iter().map(ToString::to_string).collect();
        assert_eq!(reasons, ["<trace>:1: longer than 1 MiB (the limit for one line); it was skipped"]);
        assert_eq!(report.runs[0].category, Category::Clean, "the line came before the run started");
    }

    #[test]
    fn an_over_long_line_counts_against_the_run_it_starts_with() {
        let content = "x".repeat(MAX_LINE_BYTES);
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
        let mut grader = Grader::new(4096);
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
        let mut grader = Grader::new(RUN_COST + 2 + TOOL_COST + 2 + 1000 + 100_000 * CALL_COST);
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
