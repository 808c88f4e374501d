//! The streaming contract (docs/design.md §22) as a property over every wire (`wires::all`), through
//! the real HTTP providers against the chaos server on paused time. A seeded generator scripts each
//! case: streams dropped, truncated, ended by an SSE error, corrupted by a malformed chunk and stalled
//! past the idle bound, each after a random number of the answer's chunks: before the first (a
//! failure nothing of which was shown), in its reasoning, in its text, or in the middle of a tool
//! call's arguments (shown only if text or reasoning came before); then an answer in several chunks,
//! sometimes with a tool turn before it (each turn rewinds alone), sometimes after a fallback to a
//! target on another wire. For every case:
//!
//! 1. the consumer's reconstruction (each turn's deltas, cleared at a rewind) equals `reply.text()`;
//! 2. the events are well ordered: `Done` last and once, each tool call answered once after it, a
//!    rewind right after the decision that made another call, exactly when something of the turn was
//!    shown, and naming the target the next call went to;
//! 3. the requests are `exec`'s: the same script run by `Runtime::exec` on fresh servers leaves the
//!    same journals (every field the chaos server keeps of a request) and the same counts.
//!
//! Then each mode after the commit point once per wire: buffer (never a rewind) and fail (`refused`
//! after a fault past the first chunk, no call replacing it).
//!
//! A failing case names its seed: `STREAM_WIRES_SEED=<seed>` in front of `cargo test` replays that case alone.

use std::fmt;

use agentic_chaos::{ChaosServer, JournalEntry, Scenario, Step};
use agentic_runtime::decision::Decision;
use agentic_runtime::decision::Verdict;
use agentic_runtime::exec::{ExecEvent, ExecStream, RuntimeBuilder, StreamMode};
use agentic_runtime::policy::Jitter;
use agentic_runtime::storm::Refusal;
use agentic_runtime::{ExecError, ExecErrorKind, Reply, RetryPolicy, Runtime, Toolbox};
use agentic_test_support::wires::{self, Wire};
use futures_util::StreamExt as _;
use serde_json::json;

/// Exact delays (no jitter), and bounds short enough that a stall ends in a few virtual seconds:
/// the first token within 10 s, then no more than 5 s without new content.
const POLICY: RetryPolicy =
    RetryPolicy::new().with_jitter(Jitter::None).with_first_token_timeout_ms(10_000).with_idle_timeout_ms(5_000);

/// One session retry per target, so that two faults in a row move the exec to the next target.
const FALLBACK_POLICY: RetryPolicy = POLICY.with_session_retries(1);

/// A stall longer than both bounds of [`POLICY`]: the call is always cut.
const STALL_MS: u64 = 60_000;

/// The answer's words: each chunk of a step is one or more of them.
const ANSWER: &str = "The streamed answer arrives here in eight words.";

/// What a turn that asks for the tool says first, when it says something.
const PREAMBLE: &str = "Let me look that up first.";

/// The reasoning an answer may show before its text, one chunk per word.
const REASONING: &str = "The user asks for the answer so I think it through first.";

const TOOL: &str = "lookup";
const PROMPT: &str = "What is the answer?";

/// Seeded cases per wire without a fallback, and per ordered pair of wires with one.
const CASES_PER_WIRE: u64 = 24;
const CASES_PER_PAIR: u64 = 3;

const PRIMARY_MODEL: &str = "m-primary";
const SECONDARY_MODEL: &str = "m-secondary";

/// The seeds to run: each of `0..count` after `base`, or only the one `STREAM_WIRES_SEED` names.
fn seeds(base: u64, count: u64) -> Vec<u64> {
    match std::env::var("STREAM_WIRES_SEED") {
        Ok(seed) => {
            let seed: u64 = seed.parse().expect("STREAM_WIRES_SEED must be a number, as a failure prints it");
            if (base..base + count).contains(&seed) { vec![seed] } else { Vec::new() }
        }
        Err(_) => (base..base + count).collect(),
    }
}

/// How a stream fails part-way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Drop,
    Truncate,
    SseError,
    Malformed,
    Stall,
}

impl Fault {
    const ALL: [Fault; 5] = [Fault::Drop, Fault::Truncate, Fault::SseError, Fault::Malformed, Fault::Stall];
}

/// What a streamed answer holds, in the order the chaos server streams it (each piece one chunk).
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Words of [`REASONING`] first (0: none).
    reasoning: usize,
    /// Chunks of `text` after them (0: no text).
    text: u32,
    /// Argument pieces of a call of [`TOOL`] last (0: no call).
    call: u32,
}

impl Shape {
    /// An answer with sometimes reasoning first, and when `call`, a call of the tool last (with or
    /// without text before it).
    fn random(rng: &mut fastrand::Rng, call: bool) -> Self {
        let reasoning = if rng.bool() { rng.usize(1..=REASONING.split(' ').count()) } else { 0 };
        let text = if call && rng.bool() { 0 } else { rng.u32(1..=6) };
        Self { reasoning, text, call: if call { rng.u32(1..=4) } else { 0 } }
    }

    /// The answer's text: [`ANSWER`], or none.
    fn text(self) -> &'static str {
        if self.text == 0 { "" } else { ANSWER }
    }

    /// The chunks that reach the caller as deltas (reasoning and text; a call is shown once whole).
    fn shown_chunks(self) -> u32 {
        self.reasoning as u32 + self.text
    }
}

/// The answer's text in three chunks, nothing else.
const TEXT_IN_THREE: Shape = Shape { reasoning: 0, text: 3, call: 0 };

/// The first `words` words of [`REASONING`], each with the space after it.
fn reasoning(words: usize) -> String {
    REASONING.split_inclusive(' ').take(words).collect()
}

/// `step` (a builder of a streamed answer or of a fault that cuts one, with the text of `shape`)
/// with the rest of `shape`: its text in its chunks, the reasoning before it.
macro_rules! with_text {
    ($step:expr, $shape:expr) => {{
        let shape: Shape = $shape;
        let step = $step;
        let step = if shape.text > 0 { step.chunks(shape.text) } else { step };
        if shape.reasoning > 0 { step.reasoning(reasoning(shape.reasoning)) } else { step }
    }};
}

/// A fault's `step` cutting an answer of `shape`: its text and reasoning, and the tool's call after
/// them.
macro_rules! cutting {
    ($step:expr, $shape:expr) => {{
        let shape: Shape = $shape;
        let step = with_text!($step.text(shape.text()), shape);
        Step::from(if shape.call > 0 { step.call(TOOL, arguments()).argument_chunks(shape.call) } else { step })
    }};
}

/// A fault after the first `after` chunks of an answer of `shape`.
#[derive(Debug, Clone, Copy)]
struct Cut {
    fault: Fault,
    shape: Shape,
    after: u32,
}

impl Cut {
    /// A fault at a random chunk of a random answer (a tool call's when `call`): before the first
    /// one time in four, which must be invisible; in a call's arguments half the other times.
    fn random(rng: &mut fastrand::Rng, call: bool) -> Self {
        let fault = Fault::ALL[rng.usize(..Fault::ALL.len())];
        let shape = Shape::random(rng, call);
        let chunks = Cut { fault, shape, after: 0 }.step().chunk_count().expect("a streamed answer") as u32;
        let shown = shape.shown_chunks();
        let after = if rng.u8(0..4) == 0 {
            0
        } else if shape.call > 0 && shown.max(1) < chunks && rng.bool() {
            // In the middle of the call's arguments, after what was shown of the answer if anything.
            rng.u32(shown.max(1)..chunks)
        } else {
            rng.u32(1..chunks.max(2)).min(chunks - 1)
        };
        Self { fault, shape, after }
    }

    fn step(self) -> Step {
        let after = self.after;
        match self.fault {
            Fault::Drop => cutting!(Step::drop_stream(after), self.shape),
            Fault::Truncate => cutting!(Step::truncate(after), self.shape),
            Fault::SseError => cutting!(Step::sse_error(after), self.shape),
            Fault::Malformed => cutting!(Step::malformed_chunk(after), self.shape),
            Fault::Stall => cutting!(Step::stall(STALL_MS).after_chunks(after), self.shape),
        }
    }

    /// Whether something of the call (text or reasoning) reached the caller before it failed: not
    /// when it failed before its first chunk, nor in the middle of a call that nothing preceded.
    fn shows(self) -> bool {
        self.after.min(self.shape.shown_chunks()) > 0
    }
}

/// How a model turn ends, once its faults are over: the answer, or a call of [`TOOL`] (with
/// [`PREAMBLE`] before it when its shape has text).
#[derive(Debug, Clone, Copy)]
enum End {
    Answer(Shape),
    Tool(Shape),
}

impl End {
    fn random_answer(rng: &mut fastrand::Rng) -> Self {
        End::Answer(Shape::random(rng, false))
    }

    fn random_tool(rng: &mut fastrand::Rng) -> Self {
        End::Tool(Shape::random(rng, true))
    }

    fn step(self) -> Step {
        match self {
            End::Answer(shape) => with_text!(Step::ok(shape.text()), shape).into(),
            End::Tool(shape) => {
                let call = Step::tool_use(TOOL, arguments()).argument_chunks(shape.call);
                let call = if shape.reasoning > 0 { call.reasoning(reasoning(shape.reasoning)) } else { call };
                if shape.text > 0 { call.text(PREAMBLE).into() } else { call.into() }
            }
        }
    }
}

/// One model turn as one server plays it: its faults, then how it ends (`None`: the turn goes on on
/// the next target, after a fallback).
#[derive(Debug, Clone)]
struct Turn {
    cuts: Vec<Cut>,
    end: Option<End>,
}

impl Turn {
    /// Up to `max_cuts` faults, then `end`: the faults of a turn that ends in a tool call cut
    /// answers that call it.
    fn random(rng: &mut fastrand::Rng, max_cuts: usize, end: Option<End>) -> Self {
        let calls = matches!(end, Some(End::Tool(_)));
        Self { cuts: (0..rng.usize(0..=max_cuts)).map(|_| Cut::random(rng, calls)).collect(), end }
    }

    fn steps(&self) -> impl Iterator<Item = Step> + '_ {
        self.cuts.iter().map(|cut| cut.step()).chain(self.end.iter().map(|end| end.step()))
    }
}

/// What one server plays, turn after turn.
#[derive(Debug, Clone, Default)]
struct Script {
    turns: Vec<Turn>,
}

impl Script {
    fn scenario(&self) -> Scenario {
        let scripted = self.turns.iter().flat_map(Turn::steps).fold(Scenario::new(), Scenario::then);
        // A request past the script is a bug of the runtime (or of this test): its answer says so.
        scripted.otherwise(Step::http_error(400).message("a request past the script"))
    }

    fn requests(&self) -> usize {
        self.turns.iter().map(|turn| turn.cuts.len() + usize::from(turn.end.is_some())).sum()
    }

    /// The rewinds a consumer must see: one per fault that showed something.
    fn rewinds(&self) -> usize {
        self.turns.iter().flat_map(|turn| &turn.cuts).filter(|cut| cut.shows()).count()
    }
}

/// A random script for one server without a fallback: a turn, and sometimes a tool turn before it;
/// each turn at most three faults, which the default three session retries absorb.
fn random_script(rng: &mut fastrand::Rng) -> Script {
    let mut turns = Vec::new();
    if rng.bool() {
        let end = End::random_tool(rng);
        turns.push(Turn::random(rng, 3, Some(end)));
    }
    let end = End::random_answer(rng);
    turns.push(Turn::random(rng, 3, Some(end)));
    Script { turns }
}

/// Random scripts for a primary and its fallback under [`FALLBACK_POLICY`]: the primary sometimes
/// answers a tool turn, then fails the next turn twice (its one retry used: the exec moves on); the
/// secondary fails that turn at most once and answers it.
fn random_fallback_scripts(rng: &mut fastrand::Rng) -> (Script, Script) {
    let mut primary = Vec::new();
    if rng.bool() {
        let end = End::random_tool(rng);
        primary.push(Turn::random(rng, 1, Some(end)));
    }
    let cuts = (0..2)
        .map(|_| {
            let call = rng.bool();
            Cut::random(rng, call)
        })
        .collect();
    primary.push(Turn { cuts, end: None });
    let end = End::random_answer(rng);
    let secondary = Turn::random(rng, 1, Some(end));
    (Script { turns: primary }, Script { turns: vec![secondary] })
}

/// The arguments of every call of [`TOOL`].
fn arguments() -> serde_json::Value {
    json!({"key": "the answer"})
}

/// `lookup` answers "42".
fn toolbox() -> Toolbox {
    Toolbox::new().with_fn(TOOL, "Looks a key up.", json!({"type": "object"}), |_| async { Ok("42".to_owned()) })
}

/// A target's name as the runtime spells it.
fn target_name(wire: Wire, model: &str) -> String {
    format!("{}/{model}", wire.kind.provider_name())
}

/// One case: the wires, the scripts, and the seed that made them, for every assertion's message.
struct Case {
    seed: u64,
    primary: (Wire, Script),
    secondary: Option<(Wire, Script)>,
    mode: StreamMode,
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seed {} ({:?}): {} {:?}", self.seed, self.mode, self.primary.0, self.primary.1)?;
        if let Some((wire, script)) = &self.secondary {
            write!(f, " → {wire} {script:?}")?;
        }
        Ok(())
    }
}

/// The servers of one run of a case, and its runtime.
struct Run {
    servers: Vec<ChaosServer>,
    runtime: Runtime,
}

impl Run {
    async fn start(case: &Case) -> Self {
        let mut servers = vec![ChaosServer::start(case.primary.1.scenario()).await.unwrap()];
        let primary = case.primary.0.provider_at(&case.primary.0.base_url(&servers[0]), None, Some(PRIMARY_MODEL));
        let mut builder = RuntimeBuilder::from_shared(primary).with_tools(toolbox()).with_policy(POLICY);
        if let Some((wire, script)) = &case.secondary {
            let server = ChaosServer::start(script.scenario()).await.unwrap();
            let secondary = wire.provider_at(&wire.base_url(&server), None, Some(SECONDARY_MODEL));
            builder = builder.with_fallback_shared(secondary).with_policy(FALLBACK_POLICY);
            servers.push(server);
        }
        Self { servers, runtime: builder.build().unwrap() }
    }

    /// What each server saw.
    fn journals(&self) -> Vec<Vec<JournalEntry>> {
        self.servers.iter().map(ChaosServer::journal).collect()
    }

    /// The target model call `call` went to, by the `x-agentic-call` header the servers journaled.
    fn target_of(&self, case: &Case, call: u32) -> Option<String> {
        let journals = self.journals();
        let server = journals
            .iter()
            .position(|journal| journal.iter().any(|entry| entry.agentic_call == Some(call.to_string())))?;
        Some(match server {
            0 => target_name(case.primary.0, PRIMARY_MODEL),
            _ => target_name(case.secondary.as_ref().unwrap().0, SECONDARY_MODEL),
        })
    }

    async fn shutdown(self) {
        for server in self.servers {
            server.shutdown().await;
        }
    }
}

/// What a consumer that keeps the contract saw, each rule of the order checked as the events came.
#[derive(Debug, Default)]
struct Seen {
    /// The text of each turn, the last being the current one.
    turns: Vec<String>,
    /// Something (text or reasoning) was shown since the current turn began or was rewound.
    shown: bool,
    /// The last event was a decision that made another call after something was shown: a rewind
    /// must come next.
    rewind_due: bool,
    /// `(call, target)` of each rewind.
    rewinds: Vec<(u32, Option<String>)>,
    decisions: Vec<Decision>,
    /// Tool calls not answered yet.
    open_calls: Vec<String>,
    tool_calls: usize,
    done: Option<Result<Reply, ExecError>>,
}

impl Seen {
    fn text(&self) -> &str {
        self.turns.last().map_or("", String::as_str)
    }

    fn reply(&self, case: &Case) -> &Reply {
        match self.done.as_ref().unwrap() {
            Ok(reply) => reply,
            Err(error) => panic!("{case}: the exec failed: {error}"),
        }
    }
}

async fn consume(case: &Case, mut stream: ExecStream<'_>) -> Seen {
    let mut seen = Seen { turns: vec![String::new()], ..Seen::default() };
    while let Some(event) = stream.next().await {
        assert!(seen.done.is_none(), "{case}: an event after Done: {event:?}");
        let rewind_due = std::mem::take(&mut seen.rewind_due);
        if rewind_due {
            assert!(matches!(event, ExecEvent::Rewind { .. }), "{case}: no rewind after {:?}", seen.decisions.last());
        }
        match event {
            ExecEvent::TextDelta(text) => {
                assert!(!text.is_empty(), "{case}: an empty delta");
                seen.shown = true;
                seen.turns.last_mut().unwrap().push_str(&text);
            }
            ExecEvent::ReasoningDelta(_) => seen.shown = true,
            ExecEvent::Decision(decision) => {
                let another_call =
                    matches!(decision.verdict(), Verdict::Retry | Verdict::Fallback | Verdict::Compacted);
                seen.rewind_due = another_call && seen.shown;
                seen.decisions.push(decision);
            }
            ExecEvent::Rewind { call, target, .. } => {
                assert!(rewind_due, "{case}: a rewind not right after a decision that showed something: {call}");
                seen.shown = false;
                seen.turns.last_mut().unwrap().clear();
                seen.rewinds.push((call, target));
            }
            ExecEvent::ToolCall { id, name, .. } => {
                assert_eq!(name, TOOL, "{case}");
                assert!(!seen.open_calls.contains(&id), "{case}: the tool call {id} twice");
                seen.open_calls.push(id);
                seen.tool_calls += 1;
            }
            ExecEvent::ToolResult { id, content, is_error, .. } => {
                let open = seen.open_calls.iter().position(|open| *open == id);
                let open = open.unwrap_or_else(|| panic!("{case}: a result for {id}, no call open by that id"));
                seen.open_calls.remove(open);
                assert_eq!((content.as_str(), is_error), ("42", false), "{case}");
                if seen.open_calls.is_empty() {
                    seen.turns.push(String::new());
                    seen.shown = false;
                }
            }
            ExecEvent::Done(result) => seen.done = Some(result),
            other => panic!("{case}: an event this test does not know: {other:?}"),
        }
    }
    assert!(seen.done.is_some(), "{case}: the stream ended without Done");
    assert!(seen.open_calls.is_empty(), "{case}: tool calls never answered: {:?}", seen.open_calls);
    seen
}

/// Streams `case` in its mode and checks the contract, then runs it through `exec` on fresh servers
/// and checks that the same requests were sent. Returns what the consumer saw.
async fn check(case: &Case) -> Seen {
    let streamed = Run::start(case).await;
    let seen = consume(case, streamed.runtime.request(PROMPT).stream_mode(case.mode).stream()).await;

    let decisions = match seen.done.as_ref().unwrap() {
        Ok(reply) => reply.decisions(),
        Err(error) => error.decisions(),
    };
    assert_eq!(decisions, seen.decisions, "{case}: the decisions streamed are not the outcome's");
    // Fail mode stops where `exec` goes on: its requests are checked by its test.
    if case.mode != StreamMode::Fail {
        let reply = seen.reply(case);
        assert_eq!(seen.text(), reply.text(), "{case}: the reconstruction is not the reply's text");
        let plain = Run::start(case).await;
        let expected = plain.runtime.exec(PROMPT).await.unwrap_or_else(|error| panic!("{case}: exec: {error}"));
        assert_eq!(streamed.journals(), plain.journals(), "{case}: the stream's requests are not exec's");
        assert_eq!(reply.text(), expected.text(), "{case}");
        assert_eq!((reply.calls(), reply.target()), (expected.calls(), expected.target()), "{case}");
        assert_eq!(reply.decisions().len(), expected.decisions().len(), "{case}");
        plain.shutdown().await;
    }

    // Each rewind names the target its next call went to.
    for (call, target) in &seen.rewinds {
        let next = streamed.target_of(case, call + 1);
        assert!(next.is_some(), "{case}: a rewind after call {call}, and no call after it");
        if case.secondary.is_some() {
            assert_eq!(target, &next, "{case}: the rewind after call {call}");
        } else {
            assert_eq!(target, &None, "{case}: a runtime without fallbacks names no target");
        }
    }
    streamed.shutdown().await;
    seen
}

/// Checks what every script of `case` implies: every scripted request made, no other, and one
/// rewind per fault that showed something, none for one before the first chunk.
#[track_caller]
fn check_script(case: &Case, seen: &Seen) {
    let scripts = std::iter::once(&case.primary).chain(&case.secondary).map(|(_, script)| script);
    let (requests, rewinds) =
        scripts.fold((0, 0), |(requests, rewinds), script| (requests + script.requests(), rewinds + script.rewinds()));
    let reply = seen.reply(case);
    assert_eq!(reply.calls() as usize, requests, "{case}: {:?}", reply.decisions());
    assert_eq!(seen.rewinds.len(), rewinds, "{case}: {:?}", seen.rewinds);
    assert_eq!(reply.text(), ANSWER, "{case}");
}

#[tokio::test(start_paused = true)]
async fn streams_cut_anywhere_on_every_wire_rebuild_the_reply_and_send_execs_requests() {
    for (n, wire) in wires::all().into_iter().enumerate() {
        for seed in seeds(n as u64 * 1_000, CASES_PER_WIRE) {
            let mut rng = fastrand::Rng::with_seed(seed);
            let case =
                Case { seed, primary: (wire, random_script(&mut rng)), secondary: None, mode: StreamMode::Replay };
            let seen = check(&case).await;
            check_script(&case, &seen);
            let tool_turn = case.primary.1.turns.len() == 2;
            assert_eq!(seen.tool_calls, usize::from(tool_turn), "{case}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn streams_cut_before_a_fallback_across_every_pair_of_wires_rebuild_the_reply() {
    let all = wires::all();
    let pairs = all.iter().flat_map(|&primary| all.iter().map(move |&secondary| (primary, secondary)));
    for (n, (primary, secondary)) in pairs.enumerate() {
        for seed in seeds(100_000 + n as u64 * 1_000, CASES_PER_PAIR) {
            let mut rng = fastrand::Rng::with_seed(seed);
            let (on_primary, on_secondary) = random_fallback_scripts(&mut rng);
            let case = Case {
                seed,
                primary: (primary, on_primary),
                secondary: Some((secondary, on_secondary)),
                mode: StreamMode::Replay,
            };
            let seen = check(&case).await;
            check_script(&case, &seen);
            let reply = seen.reply(&case);
            assert_eq!(reply.target(), Some(target_name(secondary, SECONDARY_MODEL).as_str()), "{case}");
            let moved = reply.decisions().iter().filter(|decision| decision.verdict() == Verdict::Fallback).count();
            assert_eq!(moved, 1, "{case}: {:?}", reply.decisions());
        }
    }
}

#[tokio::test(start_paused = true)]
async fn buffer_mode_never_rewinds_on_any_wire() {
    for (n, wire) in wires::all().into_iter().enumerate() {
        for seed in seeds(200_000 + n as u64, 1) {
            let mut rng = fastrand::Rng::with_seed(seed);
            let mut script = random_script(&mut rng);
            // At least one fault that a replay would have rewound.
            script.turns.last_mut().unwrap().cuts.push(Cut { fault: Fault::Drop, shape: TEXT_IN_THREE, after: 1 });
            let case = Case { seed, primary: (wire, script), secondary: None, mode: StreamMode::Buffer };
            let seen = check(&case).await;
            assert!(seen.rewinds.is_empty(), "{case}: {:?}", seen.rewinds);
            assert_eq!(seen.text(), ANSWER, "{case}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn fail_mode_stops_at_a_fault_past_the_first_chunk_on_every_wire() {
    for (n, wire) in wires::all().into_iter().enumerate() {
        for seed in seeds(300_000 + n as u64, 1) {
            let mut rng = fastrand::Rng::with_seed(seed);
            // Sometimes a fault before the first chunk, retried as usual; then one that showed text.
            let mut cuts = Vec::new();
            if rng.bool() {
                cuts.push(Cut { after: 0, ..Cut::random(&mut rng, false) });
            }
            let shown = std::iter::repeat_with(|| Cut::random(&mut rng, false)).find(|cut| cut.shows()).unwrap();
            cuts.push(shown);
            let script = Script { turns: vec![Turn { cuts, end: Some(End::Answer(TEXT_IN_THREE)) }] };
            let case = Case { seed, primary: (wire, script), secondary: None, mode: StreamMode::Fail };
            let seen = check(&case).await;
            let error = match seen.done.as_ref().unwrap() {
                Err(error) => error,
                Ok(reply) => panic!("{case}: answered {:?}", reply.text()),
            };
            assert_eq!(error.kind(), ExecErrorKind::Refused, "{case}: {error}");
            assert_eq!(error.refusal(), Some(&Refusal::Committed), "{case}");
            assert_eq!(
                error.calls() as usize,
                case.primary.1.requests() - 1,
                "{case}: no call replaces what was shown"
            );
            assert!(seen.rewinds.is_empty(), "{case}: {:?}", seen.rewinds);
        }
    }
}
