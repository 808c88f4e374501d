//! The fleet's pacer in Redis: the Lua scripts of `RedisStore`'s `pace_learn`, `pace_reserve` and
//! `pace_settle`, their arguments and their answers.
//!
//! A scope's buckets are one hash, `{prefix}:pace:{scope}`, with six fields per limit the scope's
//! server stated, named by the limit's kind (`requests`, `tokens`, `input_tokens`,
//! `output_tokens`): `{kind}:size`, `{kind}:level`, `{kind}:rate` (per second), `{kind}:at` (the
//! level's instant), `{kind}:full_at` (when the server said the limit is full again; absent when it
//! did not, or once that is past) and `{kind}:taken` (what was taken since it said so). Instants are
//! microseconds since the UNIX epoch on the Redis server's clock, one clock for the fleet; numbers
//! are written with 17 significant digits, so a double survives the round trip exactly.
//!
//! Each script runs the rules of the runtime's in-process pacer, line for line: its buckets' (learn,
//! refill, wait, take, give back, `storm/pace/bucket.rs`) and `Pacer::reserve`'s rule across limits.
//! A change there is a change here: the tests run one scripted sequence and a seeded random one
//! through both and compare every answer (the pacer through `agentic_runtime::__twins`). Every write sets the key's expiry to twice the
//! longest time one of its limits takes to refill from empty, within [`MIN_TTL`] and [`MAX_TTL`]:
//! a key untouched that long holds only full buckets, and forgetting it costs nothing but the
//! knowledge that the limit exists, which the next response brings back.

use std::time::Duration;

use redis::{Script, ScriptInvocation};

use agentic_runtime::storm::pace::{self, Demand, LimitKind, PaceRefused, RateLimits, Reserved};

/// The shortest expiry of a scope's key: 5 minutes, a few windows of the per-minute limits, so a
/// fleet that pauses between bursts finds its buckets again.
pub(crate) const MIN_TTL: Duration = Duration::from_secs(5 * 60);

/// The longest expiry of a scope's key: 2 days, twice the longest wait a bucket computes (a day, as
/// `pace::Bucket`): a limit that refills more slowly is forgotten after 2 idle days and learnt again
/// from the next response.
pub(crate) const MAX_TTL: Duration = Duration::from_secs(2 * 24 * 60 * 60);

/// The longest wait a bucket computes, in microseconds: `pace::Bucket`'s.
const MAX_WAIT_US: u128 = pace::MAX_WAIT.as_micros();

/// The refill window of a limit that states none and whose rate cannot be derived, in seconds:
/// `pace::Bucket`'s default.
const DEFAULT_WINDOW_SECS: u64 = pace::DEFAULT_WINDOW.as_secs();

/// Now, in microseconds, on the Redis server's clock. `redis.replicate_commands` lets a script
/// write after reading the clock on Redis before 5.
const SERVER_CLOCK: &str = r"
if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
";

/// Now, in microseconds, as the test sets it in `KEYS[2]`: the scripts on a clock the test moves.
#[cfg(test)]
const TEST_CLOCK: &str = r"
local now = tonumber(redis.call('GET', KEYS[2]))
";

/// One limit's bucket, as `pace::Bucket`: its fields in `KEYS[1]`, and its rules. A bucket is a
/// table {size, level, rate, at, full_at, taken}; `full_at` nil when the server's reset is unknown
/// or past. `KINDS`, `MAX_WAIT_US`, `MIN_TTL_MS`, `MAX_TTL_MS` and `DEFAULT_WINDOW` come first.
const BUCKET: &str = r"
local function num(x) return string.format('%.17g', x) end

local function field(kind, name) return kind .. ':' .. name end

local function load(kind)
  local f = redis.call('HMGET', KEYS[1], field(kind, 'size'), field(kind, 'level'), field(kind, 'rate'),
    field(kind, 'at'), field(kind, 'full_at'), field(kind, 'taken'))
  local b = {size = tonumber(f[1]), level = tonumber(f[2]), rate = tonumber(f[3]), at = tonumber(f[4]),
    full_at = f[5] and tonumber(f[5]) or nil, taken = tonumber(f[6])}
  -- A bucket with a field missing or unreadable is not known: the next response is learnt afresh.
  if not (b.size and b.level and b.rate and b.rate > 0 and b.at and b.taken) then return nil end
  return b
end

local function save(kind, b)
  redis.call('HSET', KEYS[1], field(kind, 'size'), num(b.size), field(kind, 'level'), num(b.level),
    field(kind, 'rate'), num(b.rate), field(kind, 'at'), num(b.at), field(kind, 'taken'), num(b.taken))
  if b.full_at then
    redis.call('HSET', KEYS[1], field(kind, 'full_at'), num(b.full_at))
  else
    redis.call('HDEL', KEYS[1], field(kind, 'full_at'))
  end
end

-- Twice the longest time one of the key's limits takes to refill from empty, within the bounds.
local function expire()
  local longest = 0
  for _, kind in ipairs(KINDS) do
    local b = load(kind)
    if b then longest = math.max(longest, b.size / b.rate * 1000) end
  end
  redis.call('PEXPIRE', KEYS[1], math.ceil(math.min(math.max(2 * longest, MIN_TTL_MS), MAX_TTL_MS)))
end

local function secs(us) return math.max(us / 1000000, 0.001) end

-- The rate a limit implies, per second; nil when neither its window nor its reset tells.
local function rate_of(l)
  local size = math.max(l.limit, 1)
  if l.window >= 0 then return size / secs(l.window) end
  -- A range of windows (what is left is rounded down, the reset to the ms): a documented one in
  -- it, else its longest (`pace::Bucket`'s `rate_of`).
  local used = math.max(l.limit - l.remaining, 0)
  if used < 2 or l.reset <= 0 then return nil end
  local reset = l.reset / 1000000
  local shortest = size * math.max(reset - 0.001, 0) / used
  local longest = size * reset / (used - 1)
  for _, window in ipairs({60, 86400}) do
    if shortest <= window and window <= longest then return size / window end
  end
  return size / math.max(longest, 0.001)
end

local function refill(b)
  b.level = math.min(b.level + b.rate * (math.max(now - b.at, 0) / 1000000), b.size)
  if b.full_at and b.full_at <= now then
    b.level = math.max(b.level, b.size - b.taken)
    b.full_at = nil
  end
  b.at = math.max(b.at, now)
end

local function learnt(l)
  local size = math.max(l.limit, 1)
  local full_at = nil
  if l.window < 0 then full_at = now + l.reset end
  local b = {size = size, level = l.remaining, rate = rate_of(l) or size / DEFAULT_WINDOW, at = now,
    full_at = full_at, taken = 0}
  refill(b)
  return b
end

local function learn(b, l)
  refill(b)
  local server = learnt(l)
  b.size = server.size
  b.rate = rate_of(l) or b.rate
  b.level = math.min(b.level, server.level)
  b.full_at = server.full_at
  b.taken = 0
end

-- The wait in microseconds before a call that needs `need` may go, behind every reservation.
local function wait_for(b, need)
  refill(b)
  need = math.min(need, b.size)
  local short = need - b.level
  if short <= 0 then return 0 end
  local by_rate = math.min(short / b.rate * 1000000, MAX_WAIT_US)
  if b.full_at and b.size - b.taken >= need then by_rate = math.min(by_rate, math.max(b.full_at - now, 0)) end
  return by_rate
end

local function take(b, need)
  need = math.min(need, b.size)
  b.level = b.level - need
  b.taken = b.taken + need
end

-- `pace::Bucket::settle`: the reservation and the usage each within the size; never below minus
-- the size (nor lower than the reservations that wait took it).
local function settle(b, reserved, used)
  local amount = math.min(reserved, b.size) - math.min(used, b.size)
  local floor = math.min(b.level, -b.size)
  b.level = math.min(math.max(b.level + amount, floor), b.size)
  b.taken = math.max(b.taken - amount, 0)
end
";

/// Takes in the limits of one response, received now. `ARGV`: five per limit stated: its kind,
/// size, remaining, reset (µs from now) and window (µs; -1: none). Returns 1.
const LEARN: &str = r"
for i = 1, #ARGV, 5 do
  local kind = ARGV[i]
  local l = {limit = tonumber(ARGV[i + 1]), remaining = tonumber(ARGV[i + 2]), reset = tonumber(ARGV[i + 3]),
    window = tonumber(ARGV[i + 4])}
  local b = load(kind)
  if b then learn(b, l) else b = learnt(l) end
  save(kind, b)
end
expire()
return 1
";

/// Reserves a call's needs (`ARGV[2..5]`, one per kind of `KINDS`) if the longest wait among the
/// known limits is shorter than `ARGV[1]` (µs; -1: no bound). Returns {0} when no limit is
/// known; {1, binding kind's index or -1, wait µs, resets in µs or -1} reserved; {2, binding kind's
/// index, wait µs, resets in µs or -1, size} refused: nothing taken and nothing written, so that
/// refused callers neither change the buckets nor keep the key from expiring.
const RESERVE: &str = r"
local left = tonumber(ARGV[1])
local buckets, known, longest, binding = {}, false, nil, nil
for i, kind in ipairs(KINDS) do
  local b = load(kind)
  if b then
    known = true
    buckets[i] = b
    local wait = wait_for(b, tonumber(ARGV[i + 1]))
    if wait > 0 and (not longest or wait > longest) then longest, binding = wait, i end
  end
end
if not known then return {0} end
local answer = {1, -1, 0, -1}
if longest then
  local b = buckets[binding]
  local resets = -1
  if b.full_at then
    resets = math.ceil(math.max(b.full_at - now, 0))
  else
    resets = math.ceil(math.min(math.max(b.size - b.level, 0) / b.rate * 1000000, MAX_WAIT_US))
  end
  answer = {1, binding - 1, math.ceil(longest), resets, b.size}
  if left >= 0 and longest >= left then return {2, binding - 1, math.ceil(longest), resets, b.size} end
end
for i, kind in ipairs(KINDS) do
  local b = buckets[i]
  if b then
    take(b, tonumber(ARGV[i + 1]))
    save(kind, b)
  end
end
expire()
return answer
";

/// Gives back what a call did not use: three per token limit, its kind, what the call reserved
/// and what it used (as reported: the script bounds both by the bucket's size). Returns 1.
const SETTLE: &str = r"
for i = 1, #ARGV, 3 do
  local b = load(ARGV[i])
  if b then
    settle(b, tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]))
    save(ARGV[i], b)
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then expire() end
return 1
";

/// The limits a call gives tokens back to: requests are not given back (the call was sent).
const TOKEN_KINDS: [LimitKind; 3] = [LimitKind::Tokens, LimitKind::InputTokens, LimitKind::OutputTokens];

/// The pacer's three scripts.
pub(crate) struct PaceScripts {
    learn: Script,
    reserve: Script,
    settle: Script,
}

impl PaceScripts {
    /// The scripts on the Redis server's clock.
    pub(crate) fn new() -> Self {
        Self::on(SERVER_CLOCK)
    }

    /// The scripts on the clock the test keeps in `KEYS[2]` (append it to each invocation).
    #[cfg(test)]
    fn on_test_clock() -> Self {
        Self::on(TEST_CLOCK)
    }

    fn on(clock: &str) -> Self {
        let kinds: Vec<String> = LimitKind::ALL.iter().map(|kind| format!("'{}'", kind.name())).collect();
        let prelude = format!(
            "{clock}local KINDS = {{{}}}\nlocal MAX_WAIT_US = {MAX_WAIT_US}\nlocal MIN_TTL_MS = {}\n\
             local MAX_TTL_MS = {}\nlocal DEFAULT_WINDOW = {DEFAULT_WINDOW_SECS}\n{BUCKET}",
            kinds.join(", "),
            MIN_TTL.as_millis(),
            MAX_TTL.as_millis(),
        );
        Self {
            learn: Script::new(&format!("{prelude}{LEARN}")),
            reserve: Script::new(&format!("{prelude}{RESERVE}")),
            settle: Script::new(&format!("{prelude}{SETTLE}")),
        }
    }

    /// Learns `limits` into the hash at `key`.
    pub(crate) fn learn(&self, key: String, limits: &RateLimits) -> ScriptInvocation<'_> {
        let mut invocation = self.learn.key(key);
        for (kind, limit) in limits.iter() {
            let window = limit.window.map_or(-1, |window| signed(micros_up(window)));
            invocation.arg(kind.name()).arg(limit.limit).arg(limit.remaining).arg(micros_up(limit.reset)).arg(window);
        }
        invocation
    }

    /// Reserves `demand` in the hash at `key` if its wait is shorter than `left`.
    pub(crate) fn reserve(&self, key: String, demand: &Demand, left: Option<Duration>) -> ScriptInvocation<'_> {
        let mut invocation = self.reserve.key(key);
        // Rounded down: a wait of exactly the time left is refused, as the pacer's.
        invocation.arg(left.map_or(-1, |left| signed(u64::try_from(left.as_micros()).unwrap_or(u64::MAX))));
        for kind in LimitKind::ALL {
            invocation.arg(demand.of(kind));
        }
        invocation
    }

    /// Gives back to the hash at `key` what a call that reserved `reserved` did not use of it.
    pub(crate) fn settle(&self, key: String, reserved: &Demand, used: &Demand) -> ScriptInvocation<'_> {
        let mut invocation = self.settle.key(key);
        for kind in TOKEN_KINDS {
            invocation.arg(kind.name()).arg(reserved.of(kind)).arg(used.of(kind));
        }
        invocation
    }
}

/// What the reserve script's `answer` says, for a caller with `left` before its deadline: `None`
/// when it is no answer of that script.
pub(crate) fn reserved_of(answer: &[i64], left: Option<Duration>) -> Option<Option<Result<Reserved, PaceRefused>>> {
    let micros = |at: usize| answer.get(at).and_then(|&us| u64::try_from(us).ok()).map(Duration::from_micros);
    let kind = |at: usize| answer.get(at).and_then(|&index| LimitKind::ALL.get(usize::try_from(index).ok()?).copied());
    let resets_in = || answer.get(3).map(|_| micros(3));
    match answer.first()? {
        0 => Some(None),
        1 if answer.get(1) == Some(&-1) => Some(Some(Ok(Reserved::NOW))),
        1 => Some(Some(Ok(Reserved {
            wait: micros(2)?,
            limit: Some(kind(1)?),
            size: u64::try_from(*answer.get(4)?).ok()?,
            resets_in: resets_in()?,
        }))),
        2 => Some(Some(Err(PaceRefused {
            limit: kind(1)?,
            size: u64::try_from(*answer.get(4)?).ok()?,
            wait: micros(2)?,
            left: left?,
            resets_in: resets_in()?,
        }))),
        _ => None,
    }
}

/// `duration` in microseconds, rounded up: a reset of less than a microsecond is still a reset.
fn micros_up(duration: Duration) -> u64 {
    let micros = duration.as_micros() + u128::from(duration.subsec_nanos() % 1_000 != 0);
    u64::try_from(micros).unwrap_or(u64::MAX)
}

/// `micros` as Redis's signed integers.
fn signed(micros: u64) -> i64 {
    i64::try_from(micros).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    //! The scripts against `Pacer` on one scripted sequence and on a seeded random one, on a clock
    //! the test moves for both (paused time for the pacer, `KEYS[2]` for the scripts), against a
    //! real Redis at `AGENTIC_REDIS_URL` (`AGENTIC_SKIP_REDIS=1` skips, as the integration tests).

    use super::*;
    use agentic_runtime::__twins::Pacer;
    use agentic_runtime::message::Usage;
    use agentic_runtime::storm::pace::{Limit, Pacing};

    const S: Duration = Duration::from_secs(1);

    /// The fleet's pacer for one scope, on the test's clock, over a blocking connection (no timer
    /// of the paused runtime waits on it).
    struct Fleet {
        scripts: PaceScripts,
        connection: redis::Connection,
        key: String,
        clock: String,
        now_us: u64,
    }

    impl Fleet {
        fn new(test: &str) -> Option<Self> {
            let (_, connection, prefix) = crate::test_redis::test_redis(test)?;
            let mut fleet = Self {
                scripts: PaceScripts::on_test_clock(),
                connection,
                key: format!("{prefix}:pace:openai:3f9a0c"),
                clock: format!("{prefix}:clock"),
                now_us: 1_750_000_000_000_000,
            };
            fleet.advance(Duration::ZERO);
            Some(fleet)
        }

        fn advance(&mut self, by: Duration) {
            self.now_us += u64::try_from(by.as_micros()).unwrap();
            redis::cmd("SET").arg(&self.clock).arg(self.now_us).arg("EX").arg(600).exec(&mut self.connection).unwrap();
        }

        fn learn(&mut self, limits: &RateLimits) {
            let mut invocation = self.scripts.learn(self.key.clone(), limits);
            let _: i64 = invocation.key(&self.clock).invoke(&mut self.connection).unwrap();
        }

        fn reserve(&mut self, demand: &Demand, left: Option<Duration>) -> Option<Result<Reserved, PaceRefused>> {
            let mut invocation = self.scripts.reserve(self.key.clone(), demand, left);
            let answer: Vec<i64> = invocation.key(&self.clock).invoke(&mut self.connection).unwrap();
            reserved_of(&answer, left).unwrap_or_else(|| panic!("not a reserve's answer: {answer:?}"))
        }

        fn settle(&mut self, reserved: &Demand, used: &Demand) {
            let mut invocation = self.scripts.settle(self.key.clone(), reserved, used);
            let _: i64 = invocation.key(&self.clock).invoke(&mut self.connection).unwrap();
        }
    }

    impl Drop for Fleet {
        fn drop(&mut self) {
            let _: Result<i64, _> = redis::cmd("DEL").arg(&self.key).arg(&self.clock).query(&mut self.connection);
        }
    }

    /// The pacer and the fleet, moved and asked together.
    struct Both {
        pacer: Pacer,
        fleet: Fleet,
        steps: usize,
    }

    impl Both {
        fn new(test: &str) -> Option<Self> {
            let pacer = Pacer::new(&Pacing::from_headers()).expect("pacing is on");
            Some(Self { pacer, fleet: Fleet::new(test)?, steps: 0 })
        }

        async fn advance(&mut self, by: Duration) {
            tokio::time::advance(by).await;
            self.fleet.advance(by);
        }

        fn learn(&mut self, limits: &RateLimits) {
            self.pacer.learn(limits, tokio::time::Instant::now());
            self.fleet.learn(limits);
        }

        /// Reserves in both and checks they agree (within a millisecond); the pacer's answer.
        fn reserve(&mut self, demand: &Demand, left: Option<Duration>) -> Result<Reserved, PaceRefused> {
            self.steps += 1;
            let step = self.steps;
            let ours = self.pacer.reserve(demand, left);
            let fleets = self.fleet.reserve(demand, left).expect("the fleet knows the limits");
            let context = format!("step {step}: {demand:?} left {left:?}: pacer {ours:?}, fleet {fleets:?}");
            match (&ours, &fleets) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.limit, b.limit, "{context}");
                    assert_close(a.wait, b.wait, &context);
                    assert_close_opt(a.resets_in, b.resets_in, &context);
                }
                (Err(a), Err(b)) => {
                    assert_eq!((a.limit, a.size, a.left), (b.limit, b.size, b.left), "{context}");
                    assert_close(a.wait, b.wait, &context);
                    assert_close_opt(a.resets_in, b.resets_in, &context);
                }
                _ => panic!("{context}"),
            }
            ours
        }

        fn settle(&mut self, demand: &Demand, usage: Option<Usage>) {
            self.pacer.settle(demand, usage.as_ref());
            let used = usage.map_or(Demand::new(0, 0), |usage| Demand::new(usage.input_tokens, usage.output_tokens));
            self.fleet.settle(demand, &used);
        }
    }

    fn assert_close(a: Duration, b: Duration, context: &str) {
        assert!(a.abs_diff(b) < Duration::from_millis(1), "{a:?} and {b:?} differ: {context}");
    }

    fn assert_close_opt(a: Option<Duration>, b: Option<Duration>, context: &str) {
        match (a, b) {
            (Some(a), Some(b)) => assert_close(a, b, context),
            (a, b) => assert_eq!(a, b, "{context}"),
        }
    }

    #[test]
    fn reads_the_reserve_scripts_answers_and_nothing_else() {
        let left = Some(S * 30);
        assert_eq!(reserved_of(&[0], left), Some(None));
        assert_eq!(reserved_of(&[1, -1, 0, -1], left), Some(Some(Ok(Reserved::NOW))));
        let reserved = Reserved { wait: S * 12, limit: Some(LimitKind::Tokens), size: 7, resets_in: Some(S * 3) };
        assert_eq!(reserved_of(&[1, 1, 12_000_000, 3_000_000, 7], left), Some(Some(Ok(reserved))));
        let refused =
            PaceRefused { limit: LimitKind::OutputTokens, size: 5, wait: S * 60, left: S * 30, resets_in: None };
        assert_eq!(reserved_of(&[2, 3, 60_000_000, -1, 5], left), Some(Some(Err(refused))));
        for garbage in [&[][..], &[3], &[1, 4, 1, 1], &[1, 0, -5, 1], &[1, 0, 1], &[2, 0, 1, 1], &[2, -1, 1, 1, 5]] {
            assert_eq!(reserved_of(garbage, left), None, "{garbage:?}");
        }
        assert_eq!(reserved_of(&[2, 0, 1, 1, 5], None), None, "a refusal without a deadline");
    }

    #[tokio::test(start_paused = true)]
    async fn the_scripts_answer_as_the_pacer_on_a_scripted_sequence() {
        let Some(mut both) = Both::new("the_scripts_answer_as_the_pacer_on_a_scripted_sequence") else { return };
        assert_eq!(both.fleet.reserve(&Demand::new(10, 10), None), None, "no limit learnt: the process paces alone");
        // OpenAI: 10 requests (a derived rate: nothing used, a minute), 400 of 1 000 tokens left,
        // full in 36 s (600 in 36 s: 1 000 a minute).
        let openai = RateLimits::new()
            .with(LimitKind::Requests, Limit::new(10, 10, S * 6))
            .with(LimitKind::Tokens, Limit::new(1000, 400, S * 36));
        both.learn(&openai);
        let call = Demand::new(150, 100);
        for _ in 0..4 {
            both.reserve(&call, Some(S * 30)).ok();
        }
        both.settle(&call, Some(Usage::new(150, 20)));
        both.advance(S * 3 / 2).await;
        both.reserve(&Demand::new(900, 300), None).ok();
        let refused = both.reserve(&call, Some(S * 5)).expect_err("the tokens are owed");
        assert_eq!(refused.limit, LimitKind::Tokens);
        both.settle(&call, None);
        both.advance(S * 37).await; // past the tokens' reset
        for _ in 0..12 {
            both.reserve(&Demand::new(1, 1), Some(S * 60)).ok();
        }
        // Another process used more; then the limits shrink; then a reset in the past.
        both.learn(&RateLimits::new().with(LimitKind::Requests, Limit::new(10, 1, S * 54)));
        both.reserve(&call, None).ok();
        both.learn(&RateLimits::new().with(LimitKind::Tokens, Limit::new(300, 300, Duration::ZERO)));
        both.reserve(&Demand::new(5000, 0), Some(S * 90)).ok(); // larger than the bucket: once it is full
        both.advance(S * 2).await;
        both.learn(&RateLimits::new().with(LimitKind::Requests, Limit::new(10, 0, Duration::ZERO)));
        both.reserve(&call, Some(S)).ok();
        // Anthropic: per minute, whatever the reset; its token limits.
        let anthropic = RateLimits::new()
            .with(LimitKind::InputTokens, Limit::new(500, 100, S * 7).with_window(S * 60))
            .with(LimitKind::OutputTokens, Limit::new(200, 200, S * 60).with_window(S * 60));
        both.learn(&anthropic);
        for _ in 0..6 {
            both.reserve(&call, Some(S * 120)).ok();
            both.advance(S * 4).await;
        }
        both.settle(&call, Some(Usage::new(400, 250)));
        both.reserve(&call, None).ok();
        // Hostile usage: u64::MAX, 1e19, and Gemini's thoughts of 2^64 - 1 added to the output.
        // Each costs a bucket at most, and a settle stops at minus the size (or the reservations
        // waiting below it): waits of a window or two, not a day, in both.
        both.advance(S * 600).await;
        let tokens = RateLimits::new().with(LimitKind::Tokens, Limit::new(1000, 1000, S * 60).with_window(S * 60));
        both.learn(&tokens);
        let mut waits = Vec::new();
        for usage in
            [Usage::new(150, u64::MAX), Usage::new(10_000_000_000_000_000_000, 0), Usage::new(u64::MAX, u64::MAX)]
        {
            waits.push(both.reserve(&call, None).expect("no deadline").wait);
            both.settle(&call, Some(usage));
        }
        assert!(waits.iter().all(|wait| *wait <= S * 120), "{waits:?}");
        let refused = both.reserve(&call, Some(S)).expect_err("the buckets are owed");
        assert!(refused.wait <= S * 120 && refused.resets_in <= Some(S * 180), "{refused:?}");
        both.advance(S * 30).await;
        both.reserve(&Demand::new(150, 30), Some(S * 90)).ok();
    }

    #[tokio::test(start_paused = true)]
    async fn the_scripts_answer_as_the_pacer_on_a_seeded_random_sequence() {
        let Some(mut both) = Both::new("the_scripts_answer_as_the_pacer_on_a_seeded_random_sequence") else { return };
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut random = move |below: u64| {
            // xorshift64*: deterministic, good enough to mix the steps.
            seed ^= seed >> 12;
            seed ^= seed << 25;
            seed ^= seed >> 27;
            seed.wrapping_mul(0x2545_f491_4f6c_dd1d) % below
        };
        let mut reserved: Vec<Demand> = Vec::new();
        for _ in 0..400 {
            match random(10) {
                0 => {
                    let mut limits = RateLimits::new();
                    for kind in LimitKind::ALL {
                        if random(2) == 0 {
                            let size = 1 + random(2000);
                            let mut limit = Limit::new(size, random(size + 1), Duration::from_millis(random(90_000)));
                            if random(2) == 0 {
                                limit = limit.with_window(S * 60);
                            }
                            limits = limits.with(kind, limit);
                        }
                    }
                    both.learn(&limits);
                }
                1 | 2 => both.advance(Duration::from_millis(random(10_000))).await,
                3 if !reserved.is_empty() => {
                    let demand = reserved.swap_remove(usize::try_from(random(reserved.len() as u64)).unwrap());
                    let usage = match random(8) {
                        0 | 1 => None,
                        2 => Some(Usage::new(random(400), u64::MAX)),
                        3 => Some(Usage::new(10_000_000_000_000_000_000, random(400))),
                        _ => Some(Usage::new(random(400), random(400))),
                    };
                    both.settle(&demand, usage);
                }
                _ if both.pacer.is_active() => {
                    let demand = Demand::new(random(300), random(300));
                    let left = (random(3) != 0).then(|| Duration::from_millis(random(120_000)));
                    if both.reserve(&demand, left).is_ok() {
                        reserved.push(demand);
                    }
                }
                _ => {}
            }
        }
        assert!(both.steps > 150, "{} reservations compared", both.steps);
    }
}
