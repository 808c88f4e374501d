//! The Lua scripts of `RedisStore`'s retry quota, cooldowns and circuit breakers, and the checks
//! every one of them makes on what it reads.
//!
//! Each script is a library of functions (the window, the breaker, the cooldown) followed by a
//! body, so that one script can do the work of several operations in one round trip (the
//! `before_call` and `after_answer` scripts). The functions take their keys and settings as
//! arguments; the bodies read them from `KEYS` and `ARGV`.
//!
//! What a script reads from Redis is input, as a server's response is: another version of the
//! runtime, a person with `redis-cli` or a bug may have written it. A field this runtime does not
//! write, or cannot have written (a count that is not a whole number, a slot in the far future, a
//! state of its own name unknown, an open period that is not a finite number), is deleted and read
//! as absent; an open period that ends later than one open period from now ends then (and is
//! written so); a key found without an expiry gets one. A malformed key therefore costs one call at
//! most its closed state, never the fleet its target, and never outlives its expiry.
//!
//! Instants are milliseconds on the Redis server's clock (`now_ms`), except the cooldowns', which
//! are the processes' wall clocks (as `RedisStore`'s docs say).

use redis::Script;

use agentic_runtime::storm::{MAX_COOLDOWN, WINDOW_SLOTS};

/// Now on the Redis server's clock, in ms. `redis.replicate_commands` lets a script write after
/// reading the clock on Redis before 5.
pub(crate) const SERVER_CLOCK: &str = r"
if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
";

/// Now as the test keeps it in the script's last key, in ms: the scripts on a clock the test moves.
#[cfg(test)]
pub(crate) const TEST_CLOCK: &str = r"
local now_ms = tonumber(redis.call('GET', KEYS[#KEYS]))
";

/// The functions every script may use (after the clock and `SLOTS`, the slots of a window).
const LIBRARY: &str = r"
-- A whole count this runtime could have written (below 2^53), or nil.
local function count(value)
  local n = tonumber(value)
  if n and n >= 0 and n < 9007199254740992 and n == math.floor(n) then return n end
  return nil
end

-- A finite number, or nil (tonumber reads 'inf' and 'nan' too).
local function finite(value)
  local n = tonumber(value)
  if n and n == n and n > -math.huge and n < math.huge then return n end
  return nil
end

-- Gives `key` an expiry of `ttl_ms` if it exists without one.
local function bounded(key, ttl_ms)
  if redis.call('PTTL', key) == -1 then redis.call('PEXPIRE', key, ttl_ms) end
end

-- The sums of a window hash's fields by kind (`s:`, `r:`, `f:`, `a:` followed by the slot), over
-- the `SLOTS` slots of `slot_ms` up to now's; fields out of the window, or malformed, are deleted.
local function tally(key, slot_ms, ttl_ms)
  local slot = math.floor(now_ms / slot_ms)
  local oldest = slot - SLOTS + 1
  local sums = {s = 0, r = 0, f = 0, a = 0}
  local fields = redis.call('HGETALL', key)
  for i = 1, #fields, 2 do
    local name = fields[i]
    local kind, at, n = string.sub(name, 1, 1), count(string.sub(name, 3)), count(fields[i + 1])
    if string.sub(name, 2, 2) == ':' and sums[kind] and at and n and at >= oldest and at <= slot + SLOTS then
      sums[kind] = sums[kind] + n
    else
      redis.call('HDEL', key, name)
    end
  end
  if #fields > 0 then bounded(key, ttl_ms) end
  return sums
end

-- Counts one of `kind` in now's slot of the window `key`.
local function bump(key, kind, slot_ms, ttl_ms)
  redis.call('HINCRBY', key, kind .. ':' .. math.floor(now_ms / slot_ms), 1)
  redis.call('PEXPIRE', key, ttl_ms)
end

-- The retry quota `key`: its window's settings, from `ARGV[at..at + 4]` (slot ms, ttl ms, the
-- fewest retries, the retry percent).
local function budget(key, at)
  return {key = key, slot_ms = tonumber(ARGV[at]), ttl_ms = tonumber(ARGV[at + 1]), min = tonumber(ARGV[at + 2]),
    percent = tonumber(ARGV[at + 3])}
end

-- A breaker: its three keys from `KEYS[at..at + 2]` (window, state, probe) and its settings from
-- `ARGV[at..at + 4]` (slot ms, open period ms, ttl ms, failure percent, fewest calls).
local function breaker(keys_at, args_at)
  return {window = KEYS[keys_at], state = KEYS[keys_at + 1], probe = KEYS[keys_at + 2],
    slot_ms = tonumber(ARGV[args_at]), open_ms = tonumber(ARGV[args_at + 1]), ttl_ms = tonumber(ARGV[args_at + 2]),
    percent = tonumber(ARGV[args_at + 3]), min_calls = tonumber(ARGV[args_at + 4])}
end

-- The breaker's state, validated: nil when closed. A state other than `open` and `half_open`,
-- counts that are not whole numbers, or an open period that is not a finite number, are a closed
-- breaker (the state is deleted); an open period ending more than one period from now ends then.
local function load(b)
  local f = redis.call('HMGET', b.state, 'state', 'until', 'failures', 'calls')
  if not f[1] then return nil end
  local s = {kind = f[1], until_ms = finite(f[2]), failures = count(f[3]), calls = count(f[4])}
  local known = s.kind == 'half_open' or (s.kind == 'open' and s.until_ms)
  if not (known and s.failures and s.calls) then
    redis.call('DEL', b.state, b.probe)
    return nil
  end
  if s.kind == 'open' and s.until_ms > now_ms + b.open_ms then
    s.until_ms = now_ms + b.open_ms
    redis.call('HSET', b.state, 'until', string.format('%.0f', s.until_ms))
  end
  bounded(b.state, b.ttl_ms)
  return s
end

local function open(b, failures, calls)
  redis.call('DEL', b.window, b.probe)
  local until_ms = string.format('%.0f', now_ms + b.open_ms)
  redis.call('HSET', b.state, 'state', 'open', 'until', until_ms, 'failures', failures, 'calls', calls)
  redis.call('PEXPIRE', b.state, b.ttl_ms)
end

-- Whether a call may go. Closed, it counts the call let through in now's `a:` slot (a call still
-- out counts as not failed). {0} closed, {1, failures, calls} the caller's probe (its key holds the
-- caller's `token`, which alone gives it back), {2, failures, calls} half-open with another's
-- probe, {3, failures, calls, left_ms} open.
local function admit(b, token)
  local s = load(b)
  if not s then
    bump(b.window, 'a', b.slot_ms, b.ttl_ms)
    return {0}
  end
  if s.kind == 'open' then
    local left = s.until_ms - now_ms
    if left > 0 then return {3, s.failures, s.calls, math.ceil(left)} end
    redis.call('HSET', b.state, 'state', 'half_open')
    redis.call('PEXPIRE', b.state, b.ttl_ms)
  end
  if redis.call('SET', b.probe, token, 'NX', 'PX', b.open_ms) then return {1, s.failures, s.calls} end
  -- A probe key this runtime did not write (no expiry) must not hold the breaker half-open for ever.
  bounded(b.probe, b.open_ms)
  return {2, s.failures, s.calls}
end

-- Counts a call's outcome (`failed`; `probe`: the call was the probe, the only one whose outcome
-- decides while half-open). {0} unchanged, {1, failures, calls} opened, {2, failures, calls} opened
-- again (the probe failed), {3} closed.
local function record(b, failed, probe)
  local s = load(b)
  if s and s.kind == 'half_open' then
    if not probe then return {0} end
    if failed then
      open(b, s.failures, s.calls)
      return {2, s.failures, s.calls}
    end
    redis.call('DEL', b.window, b.state, b.probe)
    return {3}
  end
  if s then return {0} end
  local sums = tally(b.window, b.slot_ms, b.ttl_ms)
  bump(b.window, failed and 'f' or 's', b.slot_ms, b.ttl_ms)
  if failed then sums.f = sums.f + 1 else sums.s = sums.s + 1 end
  local calls = math.max(sums.s + sums.f, sums.a)
  if calls >= b.min_calls and sums.f * 100 >= b.percent * calls then
    open(b, sums.f, calls)
    return {1, sums.f, calls}
  end
  return {0}
end

-- The end of the cooldown `key` (ms since the UNIX epoch on the processes' clocks), or -1. A
-- value that is not a whole number, or ends more than `MAX_COOLDOWN_MS` from now, is deleted; a
-- cooldown found without an expiry expires when it ends.
local function cooldown(key)
  local value = redis.call('GET', key)
  if not value then return -1 end
  local until_ms = count(value)
  if not until_ms or until_ms > now_ms + MAX_COOLDOWN_MS then
    redis.call('DEL', key)
    return -1
  end
  if redis.call('PTTL', key) == -1 then redis.call('PEXPIREAT', key, until_ms) end
  return until_ms
end
";

/// Counts one success in the budget (`KEYS[1]`, `ARGV[1..4]` as `budget`'s). Returns 1.
const DEPOSIT: &str = r"
local w = budget(KEYS[1], 1)
tally(w.key, w.slot_ms, w.ttl_ms)
bump(w.key, 's', w.slot_ms, w.ttl_ms)
return 1
";

/// Counts one retry in the budget when its window allows one: `min` retries whatever succeeded,
/// plus `percent` per 100 successes. Returns {granted, successes, retries}, the counts before it.
const TRY_WITHDRAW: &str = r"
local w = budget(KEYS[1], 1)
local sums = tally(w.key, w.slot_ms, w.ttl_ms)
local allowed = math.floor(w.min + sums.s * w.percent / 100)
if allowed - sums.r < 1 then return {0, sums.s, sums.r} end
bump(w.key, 'r', w.slot_ms, w.ttl_ms)
return {1, sums.s, sums.r}
";

/// The budget's successes and retries now: {successes, retries}.
const COUNTS: &str = r"
local w = budget(KEYS[1], 1)
local sums = tally(w.key, w.slot_ms, w.ttl_ms)
return {sums.s, sums.r}
";

/// Moves the cooldown `KEYS[1]` to `ARGV[1]` (ms since the UNIX epoch) unless it ends later, and
/// lets it expire then. Returns the end in force.
const EXTEND_COOLDOWN: &str = r"
local current = cooldown(KEYS[1])
local until_ms = tonumber(ARGV[1])
if current >= until_ms then return current end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[1])
return until_ms
";

/// The end of the cooldown `KEYS[1]`, or -1.
const COOLDOWN: &str = r"
return cooldown(KEYS[1])
";

/// Whether a call may go (`KEYS[1..3]`, `ARGV[1..5]` as `breaker`'s; `ARGV[6]` the caller's probe
/// token): `admit`'s answer.
const BREAKER_ADMIT: &str = r"
return admit(breaker(1, 1), ARGV[6])
";

/// Gives back the probe `KEYS[1]` if the admission of token `ARGV[1]` holds it (compare and
/// delete: a probe taken for lost, its key expired, may have been taken again by another caller
/// since, whose key a late give-back must leave). Returns 1 when given back, else 0.
const BREAKER_RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

/// Counts a call's outcome (`KEYS[1..3]`, `ARGV[1..5]` as `breaker`'s; `ARGV[6]` 1 when it failed,
/// `ARGV[7]` 1 when it was the probe): `record`'s answer.
const BREAKER_RECORD: &str = r"
return record(breaker(1, 1), ARGV[6] == '1', ARGV[7] == '1')
";

/// Everything a call asks before it goes, in one round trip: the cooldown (`KEYS[1]`), whether the
/// pacer knows a limit (`KEYS[2]` exists) and, when `ARGV[1]` is 1, the breaker's admission
/// (`KEYS[3..5]`, `ARGV[2..6]`, the probe token `ARGV[7]`). Returns {cooldown end or -1, 1 when a
/// limit is known or 0, then `admit`'s answer when asked}.
const BEFORE_CALL: &str = r"
local answer = {cooldown(KEYS[1]), redis.call('EXISTS', KEYS[2])}
if ARGV[1] == '1' then
  for _, n in ipairs(admit(breaker(3, 2), ARGV[7])) do table.insert(answer, n) end
end
return answer
";

/// Everything an answer changes, in one round trip: when `ARGV[1]` is 1 a success in the budget
/// (`KEYS[1]`, `ARGV[2..5]`), and when `ARGV[6]` is 1 the answer in the breaker (`KEYS[2..4]`,
/// `ARGV[7..11]`; `ARGV[12]` 1 when it was the probe). Returns `record`'s answer, {0} without a
/// breaker.
const AFTER_ANSWER: &str = r"
if ARGV[1] == '1' then
  local w = budget(KEYS[1], 2)
  tally(w.key, w.slot_ms, w.ttl_ms)
  bump(w.key, 's', w.slot_ms, w.ttl_ms)
end
if ARGV[6] ~= '1' then return {0} end
return record(breaker(2, 7), false, ARGV[12] == '1')
";

/// The store's scripts, each the library and one body.
pub(crate) struct Scripts {
    pub(crate) deposit: Script,
    pub(crate) try_withdraw: Script,
    pub(crate) counts: Script,
    pub(crate) extend_cooldown: Script,
    pub(crate) cooldown: Script,
    pub(crate) breaker_admit: Script,
    pub(crate) breaker_release: Script,
    pub(crate) breaker_record: Script,
    pub(crate) before_call: Script,
    pub(crate) after_answer: Script,
}

impl Scripts {
    /// The scripts on the Redis server's clock.
    pub(crate) fn new() -> Self {
        Self::on(SERVER_CLOCK)
    }

    /// The scripts on the clock the test keeps in each invocation's last key (in ms).
    #[cfg(test)]
    pub(crate) fn on_test_clock() -> Self {
        Self::on(TEST_CLOCK)
    }

    fn on(clock: &str) -> Self {
        let max_cooldown_ms = MAX_COOLDOWN.as_millis();
        let prelude =
            format!("{clock}local SLOTS = {WINDOW_SLOTS}\nlocal MAX_COOLDOWN_MS = {max_cooldown_ms}\n{LIBRARY}");
        let script = |body: &str| Script::new(&format!("{prelude}{body}"));
        Self {
            deposit: script(DEPOSIT),
            try_withdraw: script(TRY_WITHDRAW),
            counts: script(COUNTS),
            extend_cooldown: script(EXTEND_COOLDOWN),
            cooldown: script(COOLDOWN),
            breaker_admit: script(BREAKER_ADMIT),
            breaker_release: script(BREAKER_RELEASE),
            breaker_record: script(BREAKER_RECORD),
            before_call: script(BEFORE_CALL),
            after_answer: script(AFTER_ANSWER),
        }
    }
}
