//! The breaker and the retry window are written twice, in Rust (the runtime's `storm/breaker.rs`,
//! `storm/ledger.rs`) for one process and in Lua (`scripts.rs`) for a fleet: these tests run the
//! same sequences through both, a scripted one and a seeded random one of a few hundred steps, and
//! compare every answer. The Rust side is the runtime's own state machines (through
//! `agentic_runtime::__twins`, which exists for these tests), on paused time; the Lua side runs on a
//! clock the test keeps in each script's last key and moves with it (as the pacer's twin in
//! `pace.rs`), against the Redis at `AGENTIC_REDIS_URL` (`AGENTIC_SKIP_REDIS=1` skips).
//!
//! The one expiry that is part of the breaker's logic, the probe's (`PX` the open period, on the
//! server's real clock), is played on the test's clock: the twin deletes the probe key once the
//! test's clock has passed it, as Redis would have.

use std::rc::Rc;
use std::time::Duration;

use redis::ScriptInvocation;
use tokio::time::Instant;

use agentic_runtime::__twins::{Admission, Breaker, Ledger};
use agentic_runtime::storm::store::StoreKey;
use agentic_runtime::storm::{
    BreakerSettings, BreakerState, CallOutcome, ProbeToken, Recorded, RetryQuota, SharedAdmission,
};

use crate::scripts::Scripts;
use crate::store::{RedisStore, admission_of, budget_args, recorded_of};

/// The test clock's start, in ms: a whole number of every window's slots (1 s, 200 ms, 6 s), so
/// that the slots of both twins begin together.
const START_MS: u64 = 1_750_000_002_000;

/// The fleet's side: the scripts on the test's clock, over a blocking connection (no timer of the
/// paused runtime waits on it).
struct Fleet {
    scripts: Rc<Scripts>,
    store: RedisStore,
    connection: redis::Connection,
    prefix: String,
    clock: String,
    now_ms: u64,
}

impl Fleet {
    fn new(test: &str) -> Option<Self> {
        let (url, connection, prefix) = crate::test_redis::test_redis(test)?;
        let store = RedisStore::lazy(&url).unwrap().with_prefix(prefix.clone());
        let mut fleet = Self {
            scripts: Rc::new(Scripts::on_test_clock()),
            store,
            connection,
            clock: format!("{prefix}:clock"),
            prefix,
            now_ms: START_MS,
        };
        fleet.advance(Duration::ZERO);
        Some(fleet)
    }

    fn advance(&mut self, by: Duration) {
        self.now_ms += u64::try_from(by.as_millis()).unwrap();
        redis::cmd("SET").arg(&self.clock).arg(self.now_ms).arg("EX").arg(600).exec(&mut self.connection).unwrap();
    }

    /// Runs `invocation` with the clock as its last key.
    fn run<T: redis::FromRedisValue>(&mut self, mut invocation: ScriptInvocation<'_>) -> T {
        invocation.key(&self.clock).invoke(&mut self.connection).unwrap()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let keys: Vec<String> =
            redis::cmd("KEYS").arg(format!("{}:*", self.prefix)).query(&mut self.connection).unwrap();
        if !keys.is_empty() {
            let _: Result<i64, _> = redis::cmd("DEL").arg(keys).query(&mut self.connection);
        }
    }
}

/// A seeded xorshift64*: deterministic, good enough to mix the steps.
fn random(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut seed = seed;
    move |below| {
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        seed.wrapping_mul(0x2545_f491_4f6c_dd1d) % below
    }
}

const TARGET: StoreKey<'static> = StoreKey::new("openai:3f9a0c", "gpt-4o-mini");

/// One breaker in this process and in the fleet, moved and asked together.
struct Breakers {
    settings: BreakerSettings,
    ours: Breaker,
    fleet: Fleet,
    /// When the fleet's probe key was set, on the test's clock (it expires an open period later).
    probe_set_ms: Option<u64>,
    steps: usize,
}

impl Breakers {
    fn new(test: &str, settings: BreakerSettings) -> Option<Self> {
        let fleet = Fleet::new(test)?;
        Some(Self { settings, ours: Breaker::new(settings, Instant::now()), fleet, probe_set_ms: None, steps: 0 })
    }

    async fn advance(&mut self, by: Duration) {
        tokio::time::advance(by).await;
        self.fleet.advance(by);
        let open_ms = u64::try_from(self.settings.open_for().as_millis()).unwrap();
        if self.probe_set_ms.is_some_and(|set| set + open_ms <= self.fleet.now_ms) {
            let probe = self.fleet.store.breaker_probe_key(TARGET);
            redis::cmd("DEL").arg(probe).exec(&mut self.fleet.connection).unwrap();
            self.probe_set_ms = None;
        }
    }

    fn invocation<'s>(&self, script: &'s redis::Script) -> ScriptInvocation<'s> {
        let mut invocation = script.prepare_invoke();
        self.fleet.store.breaker_args(&mut invocation, TARGET, &self.settings);
        invocation
    }

    /// Asks both for the admission of `token`; they must agree. This process's answer.
    fn admit_as(&mut self, token: ProbeToken) -> Admission {
        self.steps += 1;
        let ours = self.ours.admit(Instant::now(), token);
        let scripts = Rc::clone(&self.fleet.scripts);
        let mut invocation = self.invocation(&scripts.breaker_admit);
        invocation.arg(token.get());
        let answer: Vec<i64> = self.fleet.run(invocation);
        let fleets = admission_of(&answer, &self.settings).unwrap_or_else(|| panic!("not an admission: {answer:?}"));
        let expected = match ours {
            Admission::Call => SharedAdmission::Call,
            Admission::Skip(state) => SharedAdmission::Skip(state),
            Admission::Probe => match self.ours.state(Instant::now()) {
                BreakerState::HalfOpen { opened } => SharedAdmission::Probe(opened),
                other => panic!("a probe in state {other:?}"),
            },
        };
        assert_eq!(expected, fleets, "step {}: admit at +{} ms", self.steps, self.fleet.now_ms - START_MS);
        if matches!(fleets, SharedAdmission::Probe(_)) {
            self.probe_set_ms = Some(self.fleet.now_ms);
        }
        ours
    }

    /// Asks both, for an admission whose token does not matter.
    fn admit(&mut self) -> Admission {
        self.admit_as(ProbeToken::new(u64::MAX))
    }

    /// Gives back the probe of the admission of `token` in both; they must agree on whether it was
    /// given back (the fleet deletes the key only while it holds the token).
    fn release(&mut self, token: ProbeToken) -> bool {
        self.steps += 1;
        let ours = self.ours.release(Instant::now(), token);
        let scripts = Rc::clone(&self.fleet.scripts);
        let mut invocation = scripts.breaker_release.key(self.fleet.store.breaker_probe_key(TARGET));
        invocation.arg(token.get());
        let fleets: i64 = self.fleet.run(invocation);
        let context = format!("step {}: release {token:?} at +{} ms", self.steps, self.fleet.now_ms - START_MS);
        assert_eq!(ours, fleets == 1, "{context}");
        if ours {
            self.probe_set_ms = None;
        }
        ours
    }

    /// Counts an outcome in both; they must agree.
    fn record(&mut self, outcome: CallOutcome, probe: bool) -> Recorded {
        self.steps += 1;
        let ours = self.ours.record(outcome, probe, Instant::now());
        let scripts = Rc::clone(&self.fleet.scripts);
        let mut invocation = self.invocation(&scripts.breaker_record);
        invocation.arg(u8::from(outcome == CallOutcome::Failed)).arg(u8::from(probe));
        let answer: Vec<i64> = self.fleet.run(invocation);
        let fleets = recorded_of(&answer, &self.settings).unwrap_or_else(|| panic!("not a record: {answer:?}"));
        let context =
            format!("step {}: {outcome:?} (probe {probe}) at +{} ms", self.steps, self.fleet.now_ms - START_MS);
        assert_eq!(ours, fleets, "{context}");
        if ours != Recorded::Unchanged {
            self.probe_set_ms = None;
        }
        ours
    }
}

#[tokio::test(start_paused = true)]
async fn the_breakers_scripts_answer_as_the_breaker_on_a_scripted_sequence() {
    let test = "the_breakers_scripts_answer_as_the_breaker_on_a_scripted_sequence";
    let Some(mut both) = Breakers::new(test, BreakerSettings::standard()) else { return };
    let second = Duration::from_secs(1);
    // A burst of 40 into a 30 % wobble: its failures first, then its answers. Closed throughout.
    for _ in 0..40 {
        both.admit();
    }
    for _ in 0..12 {
        both.record(CallOutcome::Failed, false);
    }
    for _ in 0..28 {
        both.record(CallOutcome::Answered, false);
    }
    // The window moves on: what is older than 10 s is forgotten, slot by slot.
    for _ in 0..12 {
        both.advance(second).await;
        both.record(CallOutcome::Failed, false);
    }
    // An outage: 20 failures of 20 open it; calls are skipped, late outcomes change nothing.
    both.advance(second * 11).await;
    for _ in 0..20 {
        both.admit();
        both.record(CallOutcome::Failed, false);
    }
    both.admit();
    both.record(CallOutcome::Answered, false);
    both.advance(second * 29).await;
    both.admit();
    // The open period ends: one probe, the others skip; the probe fails: open again.
    both.advance(second).await;
    assert_eq!(both.admit(), Admission::Probe);
    both.admit();
    both.record(CallOutcome::Answered, false);
    both.record(CallOutcome::Failed, true);
    both.admit();
    // Again; this probe is lost: another goes an open period later. The lost one's give-back
    // comes late and frees nothing; the other's own frees it, and the next probe's answer closes it.
    let (lost, next, last) = (ProbeToken::new(1), ProbeToken::new(2), ProbeToken::new(3));
    both.advance(second * 30).await;
    assert_eq!(both.admit_as(lost), Admission::Probe);
    both.advance(second * 29).await;
    both.admit();
    both.advance(second).await;
    assert!(!both.release(lost), "taken for lost: nothing to give back");
    assert_eq!(both.admit_as(next), Admission::Probe);
    assert!(!both.release(lost), "another admission's probe");
    assert!(matches!(both.admit(), Admission::Skip(BreakerState::HalfOpen { .. })));
    assert!(both.release(next));
    assert_eq!(both.admit_as(last), Admission::Probe);
    assert_eq!(both.record(CallOutcome::Answered, true), Recorded::Closed);
    assert!(!both.release(last), "decided: nothing to give back");
    both.admit();
    both.record(CallOutcome::Failed, false);
}

#[tokio::test(start_paused = true)]
async fn the_breakers_scripts_answer_as_the_breaker_on_a_seeded_random_sequence() {
    let test = "the_breakers_scripts_answer_as_the_breaker_on_a_seeded_random_sequence";
    // Eager settings, so that a few hundred steps open, probe and close it many times.
    let settings = BreakerSettings::new(50, 5, Duration::from_secs(2), Duration::from_secs(3)).unwrap();
    let Some(mut both) = Breakers::new(test, settings) else { return };
    let mut random = random(0x9e37_79b9_7f4a_7c15);
    // Calls let through and not yet reported: whether each is the probe, and its admission's token.
    let mut out: Vec<(bool, ProbeToken)> = Vec::new();
    let (mut transitions, mut given_back) = (0, 0);
    for admission in 0..600 {
        match random(11) {
            0 | 1 => both.advance(Duration::from_millis(random(1_500))).await,
            2..=5 => {
                let token = ProbeToken::new(admission);
                match both.admit_as(token) {
                    Admission::Call => out.push((false, token)),
                    Admission::Probe => out.push((true, token)),
                    Admission::Skip(_) => {}
                }
            }
            // A call dropped unrecorded: its permit gives back the probe it may be, late or not.
            10 if !out.is_empty() => {
                let (_, token) = out.swap_remove(usize::try_from(random(out.len() as u64)).unwrap());
                given_back += usize::from(both.release(token));
            }
            _ if !out.is_empty() => {
                let (probe, _) = out.swap_remove(usize::try_from(random(out.len() as u64)).unwrap());
                // Failures more often than not, so that it opens; a lost outcome now and then.
                let outcome = if random(10) < 6 { CallOutcome::Failed } else { CallOutcome::Answered };
                if random(20) != 0 && both.record(outcome, probe) != Recorded::Unchanged {
                    transitions += 1;
                }
            }
            _ => {}
        }
    }
    assert!(both.steps > 300, "{} steps compared", both.steps);
    assert!(transitions > 10, "{transitions} transitions: the sequence must open and close it");
    assert!(given_back > 0, "the sequence must give a probe back");
}

/// One retry window in this process and in the fleet, moved and asked together. A success is
/// placed at the instant it is counted on both sides (this process's ledger spreads successes it
/// has not read over the time since its last reading: a reading first makes that time zero).
struct Windows {
    quota: RetryQuota,
    ours: Ledger,
    fleet: Fleet,
    steps: usize,
}

impl Windows {
    fn new(test: &str, quota: RetryQuota) -> Option<Self> {
        let fleet = Fleet::new(test)?;
        Some(Self { quota, ours: Ledger::new(quota.window(), Instant::now()), fleet, steps: 0 })
    }

    async fn advance(&mut self, by: Duration) {
        tokio::time::advance(by).await;
        self.fleet.advance(by);
    }

    fn invocation<'s>(&self, script: &'s redis::Script) -> ScriptInvocation<'s> {
        let mut invocation = script.key(self.fleet.store.budget_key(TARGET.scope));
        budget_args(&mut invocation, &self.quota);
        invocation
    }

    fn deposit(&mut self) {
        let now = Instant::now();
        self.ours.read(now, 0);
        self.ours.read(now, 1);
        let scripts = Rc::clone(&self.fleet.scripts);
        let invocation = self.invocation(&scripts.deposit);
        assert_eq!(self.fleet.run::<i64>(invocation), 1);
    }

    /// Withdraws in both; they must agree on the answer and the counts before it.
    fn withdraw(&mut self) -> bool {
        self.steps += 1;
        self.ours.read(Instant::now(), 0);
        let (successes, retries) = self.ours.totals();
        let granted = self.quota.allowance(successes, retries) > 0;
        if granted {
            self.ours.add_retry();
        }
        let scripts = Rc::clone(&self.fleet.scripts);
        let invocation = self.invocation(&scripts.try_withdraw);
        let answer: Vec<i64> = self.fleet.run(invocation);
        let ours = [i64::from(granted), successes as i64, retries as i64];
        assert_eq!(ours[..], answer[..], "step {}: withdraw at +{} ms", self.steps, self.fleet.now_ms - START_MS);
        granted
    }

    /// Reads both without a change; they must agree.
    fn counts(&mut self) {
        self.ours.read(Instant::now(), 0);
        let (successes, retries) = self.ours.totals();
        let scripts = Rc::clone(&self.fleet.scripts);
        let invocation = self.invocation(&scripts.counts);
        assert_eq!(
            [successes as i64, retries as i64][..],
            self.fleet.run::<Vec<i64>>(invocation)[..],
            "step {}",
            self.steps
        );
    }
}

#[tokio::test(start_paused = true)]
async fn the_budgets_scripts_answer_as_the_ledger_on_a_scripted_sequence() {
    let test = "the_budgets_scripts_answer_as_the_ledger_on_a_scripted_sequence";
    let Some(mut both) = Windows::new(test, RetryQuota::standard().with_min_retries(3)) else { return };
    let second = Duration::from_secs(1);
    // The floor, then refused; successes pay at 10 %.
    for _ in 0..5 {
        both.withdraw();
    }
    for _ in 0..25 {
        both.deposit();
    }
    for _ in 0..4 {
        both.withdraw();
    }
    // A window later both are forgotten, slot by slot.
    for _ in 0..14 {
        both.advance(second * 5).await;
        both.deposit();
        both.withdraw();
        both.counts();
    }
    both.advance(second * 3600).await;
    both.counts();
    both.withdraw();
}

#[tokio::test(start_paused = true)]
async fn the_budgets_scripts_answer_as_the_ledger_on_a_seeded_random_sequence() {
    let test = "the_budgets_scripts_answer_as_the_ledger_on_a_seeded_random_sequence";
    let quota = RetryQuota::standard().with_window(Duration::from_secs(10)).with_min_retries(2).with_retry_percent(50);
    let Some(mut both) = Windows::new(test, quota) else { return };
    let mut random = random(0x2545_f491_4f6c_dd1d);
    let mut granted = 0;
    for _ in 0..500 {
        match random(10) {
            0 | 1 => both.advance(Duration::from_millis(random(4_000))).await,
            2..=5 => both.deposit(),
            6..=8 => granted += usize::from(both.withdraw()),
            _ => both.counts(),
        }
    }
    assert!(both.steps > 100, "{} withdrawals compared", both.steps);
    assert!(granted > 20 && granted < both.steps, "{granted} of {} granted: both answers seen", both.steps);
}
