//! Named policies for what a provider's rate limits ask of its clients.
//!
//! Each is the retry setting Python agents commonly give tenacity around that provider's client,
//! "max 5 attempts, exponential backoff min=2s/max=60s (Anthropic), min=15s/max=60s (Gemini free
//! tier)", and each follows from the provider's published limits:
//!
//! - Google's free tier of the Gemini API counts requests and tokens per minute (15 requests a
//!   minute for its Flash models): a 429 there means the minute's quota is spent, a retry within
//!   15 s mostly meets it still spent, and by 60 s a new minute has begun.
//! - Anthropic's API counts requests and tokens per minute in buckets that refill continuously, and
//!   answers 529 while overloaded: capacity comes back within seconds, so the waits start at 2 s,
//!   and 60 s is a whole minute's refill.
//!
//! A preset is those numbers in this crate's keys:
//!
//! - "max 5 attempts" (tenacity's `stop_after_attempt(5)`) is `max_calls = 5`: five model calls per
//!   exec, whichever layer makes them, and `session_retries = 4`, so that layer 1 alone may make all
//!   five, as tenacity does. The exec layer keeps its default attempts for what layer 1 does not
//!   retry (a rejected reply, `took 15000 ms`), within the same five calls.
//! - "min=…s" is the first wait, `session_base_delay_ms`, from which the waits double (§8 of
//!   docs/design.md): tenacity's `wait_exponential(multiplier=1, min, max)` waits
//!   `max(min, 2^(n-1))` seconds, which with `min=15` is 15 s four times; a floor that doubles is
//!   what "exponential from 15 s" means, and backs off further from a quota that is still spent.
//! - "max=60s" is `max_delay_ms = 60000`, the cap on every wait (after jitter).
//!
//! Every other key keeps its default (jitter included), and each preset is judged by the same rules
//! as any policy (a test here and `const` asserts in the runtime).

use crate::PolicyValues;

/// A named policy. Spelled `gemini_free_tier` in the attribute (`preset = gemini_free_tier`) and
/// `gemini-free-tier` on the command line (`agentic ask --preset gemini-free-tier`).
///
/// Not `#[non_exhaustive]`, like [`crate::Jitter`]: the attribute and the runtime match every preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Preset {
    /// Anthropic's API, whose per-minute limits refill continuously: up to 5 calls, waits from 2 s
    /// doubling to a 60 s cap (2 s, 4 s, 8 s, 16 s).
    Anthropic,
    /// Google's free tier of the Gemini API: up to 5 calls, waits from 15 s doubling to a
    /// 60 s cap (15 s, 30 s, 60 s, 60 s). The free tier's quotas are per minute (requests and
    /// tokens): a wait under 15 s mostly meets the same spent quota again.
    GeminiFreeTier,
}

impl Preset {
    /// Every preset, in the order the docs list them.
    pub const ALL: [Preset; 2] = [Preset::Anthropic, Preset::GeminiFreeTier];

    /// The preset's name in the attribute and in Rust (`RetryPolicy::gemini_free_tier()`).
    pub const fn name(self) -> &'static str {
        match self {
            Preset::Anthropic => "anthropic",
            Preset::GeminiFreeTier => "gemini_free_tier",
        }
    }

    /// The preset's name on the command line, kebab-case like the CLI's flags.
    pub const fn cli_name(self) -> &'static str {
        match self {
            Preset::Anthropic => "anthropic",
            Preset::GeminiFreeTier => "gemini-free-tier",
        }
    }

    /// The preset's variant as written in Rust (`"GeminiFreeTier"`), for the attribute's expansion.
    pub const fn variant(self) -> &'static str {
        match self {
            Preset::Anthropic => "Anthropic",
            Preset::GeminiFreeTier => "GeminiFreeTier",
        }
    }

    /// The preset named `name`, in either spelling ([`Preset::name`] or [`Preset::cli_name`]).
    pub fn from_name(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|preset| preset.name() == name || preset.cli_name() == name)
    }

    /// The preset's numbers: the defaults with `max_calls`, `session_retries`, `session_base_delay_ms`
    /// and `max_delay_ms` set.
    pub const fn values(self) -> PolicyValues {
        let first_wait_ms = match self {
            Preset::Anthropic => 2_000,
            Preset::GeminiFreeTier => 15_000,
        };
        PolicyValues {
            session_retries: 4,
            max_calls: Some(5),
            session_base_delay_ms: first_wait_ms,
            max_delay_ms: Some(60_000),
            ..PolicyValues::DEFAULT
        }
    }

    /// The keys the preset sets (the others keep their defaults), for messages that say where a
    /// value came from.
    pub const KEYS: [crate::Key; 4] =
        [crate::Key::SessionRetries, crate::Key::MaxCalls, crate::Key::SessionBaseDelayMs, crate::Key::MaxDelayMs];

    /// Every name, `` `anthropic` and `gemini_free_tier` `` (or the CLI's spelling), for messages.
    pub fn listed(cli: bool) -> String {
        let names: Vec<String> = Preset::ALL
            .iter()
            .map(|preset| format!("`{}`", if cli { preset.cli_name() } else { preset.name() }))
            .collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.concat(),
        }
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Jitter, WorstCase, describe_worst_case, violations, worst_case};

    #[test]
    fn every_preset_is_valid_and_costs_five_calls() {
        for preset in Preset::ALL {
            assert!(violations(&preset.values()).is_empty(), "{preset}: {:?}", violations(&preset.values()));
            assert_eq!(worst_case(&preset.values()).calls, 5, "{preset}");
        }
    }

    #[test]
    fn the_waits_double_from_the_floor_to_the_cap() {
        // Five calls in the first exec attempt: four session waits.
        assert_eq!(
            worst_case(&Preset::GeminiFreeTier.values()),
            WorstCase { calls: 5, backoff_ms: 15_000 + 30_000 + 60_000 + 60_000, turn_ms: 900_000 }
        );
        assert_eq!(worst_case(&Preset::Anthropic.values()).backoff_ms, 2_000 + 4_000 + 8_000 + 16_000);
        assert_eq!(
            describe_worst_case(&Preset::GeminiFreeTier.values(), Jitter::None),
            "up to 5 model calls and 165 s of backoff per exec; a model turn ends within 15 min"
        );
    }

    #[test]
    fn names_in_both_spellings() {
        assert_eq!(Preset::from_name("gemini_free_tier"), Some(Preset::GeminiFreeTier));
        assert_eq!(Preset::from_name("gemini-free-tier"), Some(Preset::GeminiFreeTier));
        assert_eq!(Preset::from_name("anthropic"), Some(Preset::Anthropic));
        assert_eq!(Preset::from_name("gemini"), None);
        assert_eq!(Preset::listed(false), "`anthropic` and `gemini_free_tier`");
        assert_eq!(Preset::listed(true), "`anthropic` and `gemini-free-tier`");
        // A preset sets exactly its `KEYS`: with those cleared, it is the defaults.
        let cleared = |mut values: PolicyValues| {
            for key in Preset::KEYS {
                values.set(key, 0);
            }
            values
        };
        for preset in Preset::ALL {
            assert_eq!(cleared(preset.values()), cleared(PolicyValues::DEFAULT), "{preset}");
        }
    }
}
