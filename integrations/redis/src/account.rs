//! The fleet's spend account in Redis: the Lua scripts of `RedisStore`'s `account_reserve` and
//! `account_settle`, their arguments and their answers.
//!
//! An account is one hash, `{prefix}:{account:<name>}:spend`, four fields per window: `<n>:rt` and
//! `<n>:rc` the tokens and millionths of a dollar held by reservations made in window `n`, `<n>:ut`
//! and `<n>:uc` what was settled in it (`n` is the window's start in ms on the Redis server's
//! clock, divided by the window). Only the current window and the one before are kept: older
//! fields, and fields this runtime cannot have written, are deleted; the key expires two windows
//! after its last write. A reservation that never settles (its process died) holds its room until
//! its window ends, no longer.
//!
//! The scripts run the rules of the runtime's `AccountBook` (`agentic_runtime::spend`), line for
//! line; the tests run a seeded sequence through both and compare every answer.

use std::time::Duration;

use redis::{Script, ScriptInvocation};

use agentic_runtime::spend::{AccountRefused, Amounts, Held, Limit, MAX_SETTLE_FACTOR, SpendAccount};

/// The window's fields, kept and checked (after the clock, as `now_ms`).
const LIBRARY: &str = r"
local window_ms = tonumber(ARGV[1])
local index = math.floor(now_ms / window_ms)
local KINDS = {rt = true, rc = true, ut = true, uc = true}

-- The fields of the current window and the one before, as numbers; every other field, or one
-- that is not a whole number, is deleted.
local function kept()
  local fields = redis.call('HGETALL', KEYS[1])
  local counts = {}
  for i = 1, #fields, 2 do
    local at, kind = string.match(fields[i], '^(%d+):(%a%a)$')
    local n = tonumber(fields[i + 1])
    at = tonumber(at)
    local whole = n and n >= 0 and n < 9007199254740992 and n == math.floor(n)
    if at and KINDS[kind] and whole and (at == index or at + 1 == index) then
      counts[fields[i]] = n
    else
      redis.call('HDEL', KEYS[1], fields[i])
    end
  end
  return counts
end

local function name(at, kind) return string.format('%d:%s', at, kind) end
";

/// Reserves the call's worst case (`ARGV`: window ms, the token limit and the dollar limit in
/// millionths, -1 for none, the tokens and millionths needed) if the window's used and held leave
/// room: {1, window, resets in ms} reserved; {0, 1 tokens or 2 dollars, max, used and held,
/// needed, resets in ms} refused (nothing written).
const RESERVE: &str = r"
local counts = kept()
local function get(kind) return counts[name(index, kind)] or 0 end
local resets = (index + 1) * window_ms - now_ms
local checks = {
  {1, tonumber(ARGV[2]), get('ut') + get('rt'), tonumber(ARGV[4])},
  {2, tonumber(ARGV[3]), get('uc') + get('rc'), tonumber(ARGV[5])},
}
for _, c in ipairs(checks) do
  if c[2] >= 0 and c[3] + c[4] > c[2] then return {0, c[1], c[2], c[3], c[4], resets} end
end
redis.call('HINCRBY', KEYS[1], name(index, 'rt'), ARGV[4])
redis.call('HINCRBY', KEYS[1], name(index, 'rc'), ARGV[5])
redis.call('PEXPIRE', KEYS[1], 2 * window_ms)
return {1, index, resets}
";

/// Settles a reservation (`ARGV`: window ms, its window, the tokens and millionths reserved,
/// the tokens and millionths used): the reservation leaves its window, and what was used, at most
/// `FACTOR` times the reservation, counts in it. A window no longer kept changes nothing. Returns
/// 1 when settled, 0 when its window was gone.
const SETTLE: &str = r"
local counts = kept()
local held = tonumber(ARGV[2])
if counts[name(held, 'rt')] == nil then return 0 end
local reserved_t, reserved_c = tonumber(ARGV[3]), tonumber(ARGV[4])
local used_t = math.min(tonumber(ARGV[5]), reserved_t * FACTOR)
local used_c = math.min(tonumber(ARGV[6]), reserved_c * FACTOR)
local function get(kind) return counts[name(held, kind)] or 0 end
redis.call('HSET', KEYS[1], name(held, 'rt'), string.format('%d', math.max(get('rt') - reserved_t, 0)),
  name(held, 'rc'), string.format('%d', math.max(get('rc') - reserved_c, 0)))
redis.call('HINCRBY', KEYS[1], name(held, 'ut'), string.format('%d', used_t))
redis.call('HINCRBY', KEYS[1], name(held, 'uc'), string.format('%d', used_c))
redis.call('PEXPIRE', KEYS[1], 2 * window_ms)
return 1
";

/// The account's two scripts.
pub(crate) struct AccountScripts {
    reserve: Script,
    settle: Script,
}

impl AccountScripts {
    /// The scripts on the Redis server's clock.
    pub(crate) fn new() -> Self {
        Self::on(crate::scripts::SERVER_CLOCK)
    }

    /// The scripts on the clock the test keeps in each invocation's last key (in ms).
    #[cfg(test)]
    pub(crate) fn on_test_clock() -> Self {
        Self::on(crate::scripts::TEST_CLOCK)
    }

    fn on(clock: &str) -> Self {
        let prelude = format!("{clock}local FACTOR = {MAX_SETTLE_FACTOR}\n{LIBRARY}");
        Self {
            reserve: Script::new(&format!("{prelude}{RESERVE}")),
            settle: Script::new(&format!("{prelude}{SETTLE}")),
        }
    }

    /// Reserves `needed` in the account at `key`.
    pub(crate) fn reserve(&self, key: String, account: &SpendAccount, needed: Amounts) -> ScriptInvocation<'_> {
        let limits = account.limits();
        let limit = |max: u64| if max == u64::MAX { -1 } else { i64::try_from(max).unwrap_or(i64::MAX) };
        let mut invocation = self.reserve.key(key);
        invocation
            .arg(account.window_ms())
            .arg(limit(limits.tokens))
            .arg(limit(limits.micro_usd))
            .arg(needed.tokens)
            .arg(needed.micro_usd);
        invocation
    }

    /// Settles `held` to `used` in the account at `key`.
    pub(crate) fn settle(
        &self,
        key: String,
        account: &SpendAccount,
        held: Held,
        used: Amounts,
    ) -> ScriptInvocation<'_> {
        let mut invocation = self.settle.key(key);
        invocation
            .arg(account.window_ms())
            .arg(held.window)
            .arg(held.reserved.tokens)
            .arg(held.reserved.micro_usd)
            .arg(used.tokens)
            .arg(used.micro_usd);
        invocation
    }
}

/// What the reserve script answered for a call that `needed`: `None` when it is no answer of it.
pub(crate) fn held_of(answer: &[i64], needed: Amounts) -> Option<Result<Held, AccountRefused>> {
    let count = |at: usize| answer.get(at).and_then(|&n| u64::try_from(n).ok());
    match answer.first()? {
        1 => Some(Ok(Held { window: count(1)?, reserved: needed })),
        0 => {
            let limit = match answer.get(1)? {
                1 => Limit::MaxTotalTokens,
                2 => Limit::MaxCostUsd,
                _ => return None,
            };
            let resets_in = Duration::from_millis(count(5)?);
            Some(Err(AccountRefused { limit, max: count(2)?, used: count(3)?, needed: count(4)?, resets_in }))
        }
        _ => None,
    }
}

/// The account's twins: a seeded sequence of reservations, settles (lying ones too) and moves of
/// the clock through the runtime's `AccountBook` and through the scripts on a clock the test keeps,
/// every answer compared (the Redis at `AGENTIC_REDIS_URL`; skipped without one).
#[cfg(test)]
mod twins {
    use agentic_runtime::spend::{AccountBook, Amounts, SpendAccount};

    use super::{AccountScripts, held_of};

    /// A seeded xorshift64*.
    fn random(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |below| {
            seed ^= seed >> 12;
            seed ^= seed << 25;
            seed ^= seed >> 27;
            seed.wrapping_mul(0x2545_f491_4f6c_dd1d) % below
        }
    }

    #[test]
    fn the_script_and_the_book_agree_step_by_step() {
        let Some((_, mut connection, prefix)) = crate::test_redis::test_redis("account twins") else { return };
        let scripts = AccountScripts::on_test_clock();
        let account =
            SpendAccount::over(std::time::Duration::from_secs(10)).with_max_total_tokens(5_000).with_max_cost_usd(0.02);
        let (key, clock) = (format!("{prefix}:account"), format!("{prefix}:clock"));
        let mut now_ms: u64 = 1_750_000_000_000;
        let mut book = AccountBook::new();
        let mut held = Vec::new();
        let mut next = random(0x5eed);
        for step in 0..600 {
            redis::cmd("SET").arg(&clock).arg(now_ms).exec(&mut connection).unwrap();
            match next(3) {
                0 | 1 => {
                    let needed = Amounts { tokens: next(1_500), micro_usd: next(6_000) };
                    let ours = book.reserve(now_ms, account.window_ms(), account.limits(), needed);
                    let mut invocation = scripts.reserve(key.clone(), &account, needed);
                    let answer: Vec<i64> = invocation.key(&clock).invoke(&mut connection).unwrap();
                    let fleets = held_of(&answer, needed).unwrap_or_else(|| panic!("not an answer: {answer:?}"));
                    assert_eq!(ours, fleets, "step {step}");
                    held.extend(ours.ok());
                }
                _ if !held.is_empty() => {
                    let settled = held.swap_remove(usize::try_from(next(held.len() as u64)).unwrap());
                    // A third of the settles report far more than was reserved.
                    let scale = if next(3) == 0 { 1_000 } else { 1 };
                    let used = Amounts { tokens: next(1_500) * scale, micro_usd: next(6_000) * scale };
                    book.settle(now_ms, account.window_ms(), settled, used);
                    let mut invocation = scripts.settle(key.clone(), &account, settled, used);
                    let _: i64 = invocation.key(&clock).invoke(&mut connection).unwrap();
                }
                _ => {}
            }
            now_ms += next(1_500);
        }
        let _: i64 = redis::cmd("DEL").arg(&key).arg(&clock).query(&mut connection).unwrap();
    }
}
