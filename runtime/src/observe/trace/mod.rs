//! JSONL traces of agent runs (docs/design.md §14). The runtime writes them; `agentic grade` (the
//! CLI) reads and grades them, parsing the lines as [`TraceEvent`]s.
//!
//! A [`TraceSink`] receives one JSON object per line, one line per task event of a run:
//!
//! ```json
//! {"event":"agent_start","ts_ms":1750000000000,"run_id":"run-5f1c9a2e40d3b718","function":"weather"}
//! {"event":"tool_call","ts_ms":1750000000412,"run_id":"run-5f1c9a2e40d3b718","tool":"get_weather","arguments":{"city":"Paris"},"call_id":"call_1"}
//! {"event":"tool_result","ts_ms":1750000000413,"run_id":"run-5f1c9a2e40d3b718","call_id":"call_1","is_error":true,"content":"RateLimitError: 429","tool":"get_weather"}
//! {"event":"compaction","ts_ms":1750000001200,"run_id":"run-5f1c9a2e40d3b718","compactor":"drop_oldest","before":7,"after":5}
//! {"event":"agent_finish","ts_ms":1750000003020,"run_id":"run-5f1c9a2e40d3b718","final_text":"It is sunny.","iterations":3}
//! ```
//!
//! Every line has `event`, `ts_ms` (milliseconds since the UNIX epoch) and `run_id` (unique per
//! exec), and is at most [`MAX_LINE_BYTES`] long, what the readers read (see [`TraceSink::write`]).
//! `tool_result` also names its `tool`, so that a line can be read alone. A `compaction`
//! says that the conversation overflowed the model's context and a
//! [compactor](crate::compact) shortened it (from `before` messages to `after`). Infrastructure
//! retries are not task events: they go to `tracing` and the journal, never here. A run whose
//! retry layers gave up has no `agent_finish`, which is what makes `agentic grade` call it
//! `incomplete`.
//!
//! # Examples
//!
//! ```
//! use agentic_runtime::observe::trace::{TraceEvent, TraceSink};
//! use serde_json::json;
//!
//! let sink = TraceSink::in_memory().with_clock(|| 1_000);
//! let run = sink.start_run_with_id("run-1", Some("weather"));
//! run.tool_call("call_1", "get_weather", &json!({"city": "Paris"}));
//! run.tool_result("call_1", "get_weather", false, "sunny");
//! run.agent_finish("It is sunny in Paris.", 2);
//!
//! let text = sink.contents().unwrap();
//! assert_eq!(text.lines().count(), 4);
//! assert_eq!(
//!     text.lines().next().unwrap(),
//!     r#"{"event":"agent_start","ts_ms":1000,"run_id":"run-1","function":"weather"}"#
//! );
//! let events = TraceEvent::parse_all(&text).unwrap();
//! assert!(matches!(&events[3], TraceEvent::AgentFinish { iterations: 2, .. }));
//! ```

mod fit;

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::util::append::{self, Append, Lost, Records, Writer};

/// The longest line a [`TraceSink`] writes, in bytes, without its `\n`: 1 MiB. An event whose line
/// would be longer has its longest texts cut (see [`TraceSink::write`]).
///
/// One line of a trace is a few hundred bytes; a tool result or an error quoted in full rarely
/// passes 100 KiB. 1 MiB is ten times that, and small enough that a reader holds one line without
/// a thought: `agentic grade` reads lines up to this bound, so every line written is read.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// One line of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TraceEvent {
    /// A run (one exec) starts.
    AgentStart {
        /// Milliseconds since the UNIX epoch.
        ts_ms: u64,
        /// The run's id.
        run_id: String,
        /// The agent function's name (`null` for an anonymous exec).
        function: Option<String>,
    },
    /// The model called a tool.
    ToolCall {
        /// Milliseconds since the UNIX epoch.
        ts_ms: u64,
        /// The run's id.
        run_id: String,
        /// The tool the model named (it may not exist: the result then says so).
        tool: String,
        /// The arguments the model sent.
        arguments: Value,
        /// The call's id, echoed by its `tool_result`.
        call_id: String,
    },
    /// A tool call's result went back to the model.
    ToolResult {
        /// Milliseconds since the UNIX epoch.
        ts_ms: u64,
        /// The run's id.
        run_id: String,
        /// The id of the `tool_call` this answers.
        call_id: String,
        /// True when the call failed; the model decides what to do about it. Read as `error` too.
        #[serde(alias = "error")]
        is_error: bool,
        /// The result, or the error's text.
        content: String,
        /// The tool (also known from the `tool_call`; absent in traces written by others).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
    },
    /// The conversation overflowed the model's context and a compactor shortened it; the turn is
    /// made again with the shorter one.
    Compaction {
        /// Milliseconds since the UNIX epoch.
        ts_ms: u64,
        /// The run's id.
        run_id: String,
        /// The compactor's name, e.g. `drop_oldest`.
        compactor: String,
        /// Messages in the conversation that overflowed.
        before: usize,
        /// Messages in the shorter one.
        after: usize,
    },
    /// The run ended with the model's final text.
    AgentFinish {
        /// Milliseconds since the UNIX epoch.
        ts_ms: u64,
        /// The run's id.
        run_id: String,
        /// The model's final text.
        final_text: String,
        /// How many model turns the run took (a turn retried by the layers counts once).
        iterations: u32,
    },
}

impl TraceEvent {
    /// The event's name, as in its `event` field: `agent_start`, `tool_call`, `tool_result`,
    /// `compaction`, `agent_finish`.
    pub fn name(&self) -> &'static str {
        match self {
            TraceEvent::AgentStart { .. } => "agent_start",
            TraceEvent::ToolCall { .. } => "tool_call",
            TraceEvent::ToolResult { .. } => "tool_result",
            TraceEvent::Compaction { .. } => "compaction",
            TraceEvent::AgentFinish { .. } => "agent_finish",
        }
    }

    /// The run the event belongs to.
    pub fn run_id(&self) -> &str {
        match self {
            TraceEvent::AgentStart { run_id, .. }
            | TraceEvent::ToolCall { run_id, .. }
            | TraceEvent::ToolResult { run_id, .. }
            | TraceEvent::Compaction { run_id, .. }
            | TraceEvent::AgentFinish { run_id, .. } => run_id,
        }
    }

    /// Its timestamp, in milliseconds since the UNIX epoch.
    pub fn ts_ms(&self) -> u64 {
        match self {
            TraceEvent::AgentStart { ts_ms, .. }
            | TraceEvent::ToolCall { ts_ms, .. }
            | TraceEvent::ToolResult { ts_ms, .. }
            | TraceEvent::Compaction { ts_ms, .. }
            | TraceEvent::AgentFinish { ts_ms, .. } => *ts_ms,
        }
    }

    /// Every non-blank line of `text` parsed as an event, or the first line's error (for tests
    /// and tools; `agentic grade` is the lenient reader, which reports a bad line and reads on).
    pub fn parse_all(text: &str) -> Result<Vec<TraceEvent>, serde_json::Error> {
        text.lines().filter(|line| !line.trim().is_empty()).map(serde_json::from_str).collect()
    }
}

/// Where trace lines go: a file (appended to), any writer, or memory. Cloning is cheap: clones
/// write to the same place.
///
/// Each event is built as one complete line and written behind a mutex, so lines from concurrent
/// runs never interleave (and a file opened in append mode gets each line in one piece). A line
/// lands whole or not at all: one that a full disk cuts is taken back, or, when it cannot be, the
/// next line starts on a line of its own, so only the cut one is lost (the same for a file that
/// ends mid-line when it is opened). A failed write never fails the run: the first failure is logged with
/// `tracing::warn!`, later ones only at `debug` level; and the sink keeps the first failure and the
/// count of lines lost, which [`TraceSink::flush`] reports, so that a caller whose trace must be
/// whole can tell it is not (`agentic ask --trace` exits 1).
///
/// # Timestamps
///
/// `ts_ms` is the wall clock (`SystemTime`) read when the sink was made, plus the time elapsed
/// since on tokio's clock (`tokio::time::Instant`). Under a paused tokio clock
/// (`#[tokio::test(start_paused = true)]`) timestamps therefore advance exactly by the virtual
/// time: two events with no sleep between them are 0 ms apart, a 2 s backoff is exactly 2000 ms.
/// [`TraceSink::with_clock`] replaces the clock altogether.
#[derive(Clone)]
pub struct TraceSink {
    inner: Arc<Inner>,
    clock: Clock,
}

struct Inner {
    target: Mutex<Target>,
    /// What the sink writes to, for the warning and the error.
    describe: String,
    /// The lines that could not be written.
    lost: Lost,
}

enum Target {
    /// A file or a writer.
    Records(Records<Box<dyn Append>>),
    Memory(Vec<u8>),
}

#[derive(Clone)]
enum Clock {
    /// The wall clock at creation plus tokio's elapsed time.
    Tokio {
        wall_ms: u64,
        start: tokio::time::Instant,
    },
    Custom(Arc<dyn Fn() -> u64 + Send + Sync>),
}

impl Clock {
    fn tokio() -> Self {
        let wall_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis() as u64);
        Clock::Tokio { wall_ms, start: tokio::time::Instant::now() }
    }

    fn now_ms(&self) -> u64 {
        match self {
            Clock::Tokio { wall_ms, start } => {
                let elapsed = tokio::time::Instant::now().saturating_duration_since(*start);
                wall_ms.saturating_add(elapsed.as_millis() as u64)
            }
            Clock::Custom(clock) => clock(),
        }
    }
}

impl fmt::Debug for TraceSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceSink").field("target", &self.inner.describe).finish_non_exhaustive()
    }
}

impl TraceSink {
    fn new(target: Target, describe: String) -> Self {
        Self {
            inner: Arc::new(Inner { target: Mutex::new(target), describe, lost: Lost::default() }),
            clock: Clock::tokio(),
        }
    }

    /// A sink that appends to the file at `path`, creating it if needed.
    ///
    /// # Errors
    ///
    /// If the file cannot be opened for appending; the error keeps its kind and its
    /// message names the path: ``cannot open the trace file `traces/run.jsonl`: ...``.
    pub fn to_file(path: impl AsRef<Path>) -> io::Result<Self> {
        let path: PathBuf = path.as_ref().to_path_buf();
        let records = append::open(&path, "the trace file")?;
        Ok(Self::to_records(records, format!("the file `{}`", path.display())))
    }

    /// A sink that writes to `writer` (flushed after every line), e.g. `std::io::stderr()`.
    pub fn to_writer(writer: impl Write + Send + 'static) -> Self {
        Self::to_records(Records::new(Box::new(Writer(Box::new(writer))), false), "a writer".to_owned())
    }

    /// A sink that appends `records`, described by `describe`.
    pub(crate) fn to_records(records: Records<Box<dyn Append>>, describe: String) -> Self {
        Self::new(Target::Records(records), describe)
    }

    /// A sink that keeps the lines in memory; read them with [`TraceSink::contents`].
    pub fn in_memory() -> Self {
        Self::new(Target::Memory(Vec::new()), "memory".to_owned())
    }

    /// Timestamps from `clock` (milliseconds since the UNIX epoch) instead of the default clock
    /// (see [Timestamps](TraceSink#timestamps)). Only this handle and its later clones use it.
    pub fn with_clock(mut self, clock: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        self.clock = Clock::Custom(Arc::new(clock));
        self
    }

    /// The lines an [in-memory](TraceSink::in_memory) sink holds; `None` for other sinks.
    pub fn contents(&self) -> Option<String> {
        match &*self.lock() {
            Target::Memory(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        }
    }

    /// The time now, in milliseconds since the UNIX epoch, as the sink stamps events.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Starts a run with a fresh id (`run-` and 16 random hex digits) and writes its
    /// `agent_start`.
    pub fn start_run(&self, function: Option<&str>) -> RunTrace {
        self.start_run_with_id(format!("run-{:016x}", fastrand::u64(..)), function)
    }

    /// Starts a run with the id `run_id` (the caller keeps it unique) and writes its
    /// `agent_start`.
    pub fn start_run_with_id(&self, run_id: impl Into<String>, function: Option<&str>) -> RunTrace {
        let run = RunTrace { sink: self.clone(), run_id: Arc::from(run_id.into()) };
        self.write(&TraceEvent::AgentStart {
            ts_ms: self.now_ms(),
            run_id: run.run_id.to_string(),
            function: function.map(str::to_owned),
        });
        run
    }

    /// Writes `event` as one line, of at most [`MAX_LINE_BYTES`] (what the readers read): an event
    /// that would be longer has its longest texts cut (a result's content, a call's arguments, a
    /// final text), each ending with a note saying how much was cut, JSON escapes counted. A
    /// failure is logged (once per sink) and kept for [`TraceSink::flush`], never returned here.
    pub fn write(&self, event: &TraceEvent) {
        let mut line = match fit::line(event, MAX_LINE_BYTES) {
            Ok(line) => line,
            Err(error) => return self.failed(&io::Error::other(error)),
        };
        line.push('\n');
        let result = match &mut *self.lock() {
            Target::Records(records) => records.append(line.as_bytes()),
            Target::Memory(bytes) => {
                bytes.extend_from_slice(line.as_bytes());
                Ok(())
            }
        };
        if let Err(error) = result {
            self.failed(&error);
        }
    }

    /// Flushes what was written, and reports whether every line since the sink was made was
    /// written: `Err` with the first failure's kind, naming the target, the cause and how many
    /// lines were lost (``cannot write the trace to the file `t.jsonl`: No space left on device
    /// (os error 28) (3 lines lost)``), else the flush's own result. The failure is kept, for every
    /// clone and every later call, as Go's `bufio.Writer` keeps its first error for `Flush`: a
    /// lost line stays lost. Call it when the run's record is done (the end of a program, a
    /// batch), where a trace that is not whole must be known.
    ///
    /// # Errors
    ///
    /// As above.
    pub fn flush(&self) -> io::Result<()> {
        self.inner.lost.check(&format!("the trace to {}", self.inner.describe), "line")?;
        match &mut *self.lock() {
            Target::Records(records) => records.flush(),
            Target::Memory(_) => Ok(()),
        }
    }

    fn failed(&self, error: &io::Error) {
        if self.inner.lost.note(error) {
            tracing::warn!(sink = %self.inner.describe, %error,
                "cannot write the trace; the run goes on, and further trace lines that fail are dropped \
                 (`TraceSink::flush` reports them)");
        } else {
            tracing::debug!(sink = %self.inner.describe, %error, "trace line dropped");
        }
    }

    /// A poisoned lock only means a writer panicked; the target is still usable.
    fn lock(&self) -> MutexGuard<'_, Target> {
        self.inner.target.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The trace of one run: its id and the sink. Cheap to clone.
#[derive(Debug, Clone)]
pub struct RunTrace {
    sink: TraceSink,
    run_id: Arc<str>,
}

impl RunTrace {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The sink it writes to.
    pub fn sink(&self) -> &TraceSink {
        &self.sink
    }

    /// Writes a `tool_call`.
    pub fn tool_call(&self, call_id: &str, tool: &str, arguments: &Value) {
        self.sink.write(&TraceEvent::ToolCall {
            ts_ms: self.sink.now_ms(),
            run_id: self.run_id.to_string(),
            tool: tool.to_owned(),
            arguments: arguments.clone(),
            call_id: call_id.to_owned(),
        });
    }

    /// Writes a `tool_result`.
    pub fn tool_result(&self, call_id: &str, tool: &str, is_error: bool, content: &str) {
        self.sink.write(&TraceEvent::ToolResult {
            ts_ms: self.sink.now_ms(),
            run_id: self.run_id.to_string(),
            call_id: call_id.to_owned(),
            is_error,
            content: content.to_owned(),
            tool: Some(tool.to_owned()),
        });
    }

    /// Writes a `compaction`: `compactor` shortened the conversation from `before` messages to `after`.
    pub fn compaction(&self, compactor: &str, before: usize, after: usize) {
        self.sink.write(&TraceEvent::Compaction {
            ts_ms: self.sink.now_ms(),
            run_id: self.run_id.to_string(),
            compactor: compactor.to_owned(),
            before,
            after,
        });
    }

    /// Writes the `agent_finish`: the model's final text and the number of model turns.
    pub fn agent_finish(&self, final_text: &str, iterations: u32) {
        self.sink.write(&TraceEvent::AgentFinish {
            ts_ms: self.sink.now_ms(),
            run_id: self.run_id.to_string(),
            final_text: final_text.to_owned(),
            iterations,
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    /// A writer that always fails.
    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn timestamps_follow_the_paused_clock_exactly() {
        let sink = TraceSink::in_memory();
        let run = sink.start_run(Some("f"));
        assert!(run.run_id().starts_with("run-") && run.run_id().len() == 20, "{}", run.run_id());
        run.tool_call("c1", "t", &json!({}));
        run.tool_result("c1", "t", true, "RateLimitError: 429");
        tokio::time::sleep(Duration::from_millis(2_000)).await;
        run.agent_finish("done", 2);
        let events = TraceEvent::parse_all(&sink.contents().unwrap()).unwrap();
        let ts: Vec<u64> = events.iter().map(TraceEvent::ts_ms).collect();
        assert_eq!(ts[1] - ts[0], 0);
        assert_eq!(ts[2] - ts[1], 0);
        assert_eq!(ts[3] - ts[2], 2_000);
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        assert!(ts[0].abs_diff(wall) < 60_000, "the epoch base is the wall clock: {} vs {wall}", ts[0]);
        assert!(events.iter().all(|event| event.run_id() == run.run_id()));
        let names: Vec<&str> = events.iter().map(TraceEvent::name).collect();
        assert_eq!(names, ["agent_start", "tool_call", "tool_result", "agent_finish"]);
    }

    #[test]
    fn lines_have_the_documented_shape() {
        let sink = TraceSink::in_memory().with_clock(|| 7);
        let run = sink.start_run_with_id("r", None);
        run.tool_call("c1", "get_weather", &json!({"city": "Paris"}));
        run.tool_result("c1", "get_weather", true, "boom");
        run.agent_finish("bye", 1);
        assert_eq!(
            sink.contents().unwrap(),
            concat!(
                r#"{"event":"agent_start","ts_ms":7,"run_id":"r","function":null}"#,
                "\n",
                r#"{"event":"tool_call","ts_ms":7,"run_id":"r","tool":"get_weather","arguments":{"city":"Paris"},"call_id":"c1"}"#,
                "\n",
                r#"{"event":"tool_result","ts_ms":7,"run_id":"r","call_id":"c1","is_error":true,"content":"boom","tool":"get_weather"}"#,
                "\n",
                r#"{"event":"agent_finish","ts_ms":7,"run_id":"r","final_text":"bye","iterations":1}"#,
                "\n",
            )
        );
        let legacy: TraceEvent = serde_json::from_str(
            r#"{"event":"tool_result","ts_ms":1,"run_id":"r","call_id":"c","error":true,"content":""}"#,
        )
        .unwrap();
        assert!(matches!(legacy, TraceEvent::ToolResult { is_error: true, tool: None, .. }));
    }

    #[test]
    fn a_failing_writer_never_fails_the_caller_and_flush_reports_it() {
        let sink = TraceSink::to_writer(Broken);
        let run = sink.start_run(None);
        run.agent_finish("still fine", 1);
        assert_eq!(sink.contents(), None);
        let error = sink.clone().flush().unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::Other);
        assert_eq!(error.to_string(), "cannot write the trace to a writer: disk full (2 lines lost)");
        assert_eq!(sink.flush().unwrap_err().to_string(), error.to_string(), "a lost line stays lost");
        let whole = TraceSink::to_writer(Vec::new());
        whole.start_run(None).agent_finish("kept", 1);
        whole.flush().unwrap();
        TraceSink::in_memory().flush().unwrap();
    }

    #[test]
    fn a_line_cut_by_a_full_disk_is_taken_back_or_ended() {
        let result = |run: &RunTrace| run.tool_result("c1", "t", true, &"x".repeat(200));
        let whole = TraceSink::in_memory().with_clock(|| 7);
        result(&whole.start_run_with_id("r", None));
        let whole = whole.contents().unwrap().lines().nth(1).unwrap().to_owned();
        for undo in [true, false] {
            let disk = crate::util::append::tests::FullDisk::new(100, undo);
            let records = Records::new(Box::new(disk.clone()) as Box<dyn Append>, false);
            let sink = TraceSink::to_records(records, "a full disk".to_owned()).with_clock(|| 7);
            let run = sink.start_run_with_id("r", None);
            result(&run);
            assert!(sink.flush().unwrap_err().to_string().ends_with("(1 line lost)"));
            disk.make_room(usize::MAX);
            run.agent_finish("done", 1);
            let text = disk.text();
            let lines: Vec<&str> = text.lines().collect();
            let events: Vec<Option<&str>> = lines
                .iter()
                .map(|line| serde_json::from_str::<TraceEvent>(line).ok().map(|event| event.name()))
                .collect();
            if undo {
                assert_eq!(events, [Some("agent_start"), Some("agent_finish")], "the cut line is gone: {text}");
            } else {
                assert_eq!(events, [Some("agent_start"), None, Some("agent_finish")], "{text}");
                assert!(whole.starts_with(lines[1]) && lines[1].len() < whole.len(), "the start of the result: {text}");
            }
            assert!(text.ends_with(
                "\n{\"event\":\"agent_finish\",\"ts_ms\":7,\"run_id\":\"r\",\"final_text\":\"done\",\"iterations\":1}\n"
            ));
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_device_and_a_bad_path_fail_clearly() {
        let sink = TraceSink::to_file("/dev/full").unwrap();
        sink.start_run(None).agent_finish("lost", 1);
        let error = sink.flush().unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::StorageFull);
        assert_eq!(
            error.to_string(),
            "cannot write the trace to the file `/dev/full`: No space left on device (os error 28) (2 lines lost)"
        );
        let error = TraceSink::to_file("/no/such/dir/trace.jsonl").unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot open the trace file `/no/such/dir/trace.jsonl`: No such file or directory (os error 2)"
        );
    }

    #[test]
    fn a_file_cut_by_a_crash_gets_its_next_line_on_a_line_of_its_own() {
        let path = std::env::temp_dir().join(format!("agentic-trace-cut-{}.jsonl", fastrand::u64(..)));
        std::fs::write(&path, "{\"event\":\"agent_start\",\"run_id\":\"crashed\"}\n{\"event\":\"tool_res").unwrap();
        TraceSink::to_file(&path).unwrap().start_run_with_id("next", None).agent_finish("ok", 1);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[..2], ["{\"event\":\"agent_start\",\"run_id\":\"crashed\"}", "{\"event\":\"tool_res"]);
        let events = TraceEvent::parse_all(&lines[2..].join("\n")).unwrap();
        let got: Vec<(&str, &str)> = events.iter().map(|event| (event.name(), event.run_id())).collect();
        assert_eq!(got, [("agent_start", "next"), ("agent_finish", "next")], "{text}");
    }

    #[test]
    fn files_are_appended_to_line_by_line_from_many_threads() {
        let path = std::env::temp_dir().join(format!("agentic-trace-{}.jsonl", fastrand::u64(..)));
        let sink = TraceSink::to_file(&path).unwrap();
        let big = "x".repeat(64 * 1024);
        std::thread::scope(|scope| {
            for thread in 0..4 {
                let sink = sink.clone();
                let big = &big;
                scope.spawn(move || {
                    let run = sink.start_run_with_id(format!("run-{thread}"), None);
                    for i in 0..25 {
                        run.tool_result(&format!("c{i}"), "t", false, big);
                    }
                });
            }
        });
        let again = TraceSink::to_file(&path).unwrap();
        again.start_run_with_id("run-last", None);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let events = TraceEvent::parse_all(&text).unwrap();
        assert_eq!(events.len(), 4 * 26 + 1);
        assert_eq!(events.last().unwrap().run_id(), "run-last");
    }
}
