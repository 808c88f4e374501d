//! Reading [`RateLimits`] from a response's headers: OpenAI's `x-ratelimit-*` family (resets as Go
//! durations) and Anthropic's `anthropic-ratelimit-*` family (resets as RFC 3339 instants). Both
//! parsers are written here by hand: each is a few lines, and neither format needs a crate.

use std::time::{Duration, SystemTime};

use super::limits::{Limit, LimitKind, RateLimits};

/// The OpenAI family: for each kind, its `limit`, `remaining` and `reset` headers.
const OPENAI: [(LimitKind, [&str; 3]); 2] = [
    (
        LimitKind::Requests,
        ["x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"],
    ),
    (LimitKind::Tokens, ["x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"]),
];

/// The Anthropic family, as [`OPENAI`].
const ANTHROPIC: [(LimitKind, [&str; 3]); 4] = [
    (
        LimitKind::Requests,
        [
            "anthropic-ratelimit-requests-limit",
            "anthropic-ratelimit-requests-remaining",
            "anthropic-ratelimit-requests-reset",
        ],
    ),
    (
        LimitKind::Tokens,
        [
            "anthropic-ratelimit-tokens-limit",
            "anthropic-ratelimit-tokens-remaining",
            "anthropic-ratelimit-tokens-reset",
        ],
    ),
    (
        LimitKind::InputTokens,
        [
            "anthropic-ratelimit-input-tokens-limit",
            "anthropic-ratelimit-input-tokens-remaining",
            "anthropic-ratelimit-input-tokens-reset",
        ],
    ),
    (
        LimitKind::OutputTokens,
        [
            "anthropic-ratelimit-output-tokens-limit",
            "anthropic-ratelimit-output-tokens-remaining",
            "anthropic-ratelimit-output-tokens-reset",
        ],
    ),
];

/// Anthropic's limits are per minute: each refills whole in 60 s.
const ANTHROPIC_WINDOW: Duration = Duration::from_secs(60);

/// Whether a header name (lower case, as HTTP/2 and the `http` crate give it) is one of the two
/// families': a cheap test, so that a response without any is read no further.
#[cfg(any(feature = "providers", test))]
pub(crate) fn is_rate_limit_header(name: &str) -> bool {
    name.starts_with("x-ratelimit-") || name.starts_with("anthropic-ratelimit-")
}

impl RateLimits {
    /// The limits a response's headers state; `header` looks a header's value up by its lower-case
    /// name, and `now` is when the response came (Anthropic's resets are instants). Empty when the
    /// headers state none.
    ///
    /// A limit counts only when its `limit`, `remaining` and `reset` all parse: nothing is learnt
    /// from half a statement. OpenAI's resets are Go durations (`"12ms"`, `"1.5s"`, `"6m0s"`,
    /// `"1h2m3s"`; a number without a unit other than `"0"` is not one); Anthropic's are RFC 3339
    /// instants (`Z` or an offset; one in the past is a reset of zero), each limit refilling over
    /// 60 s, and cached reads free. A value too large for a [`Duration`] is [`Duration::MAX`]. Where
    /// both families state one kind (a gateway passing both on), the one with less remaining wins.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use agentic_runtime::storm::pace::{LimitKind, RateLimits};
    ///
    /// let headers = [
    ///     ("x-ratelimit-limit-requests", "60"),
    ///     ("x-ratelimit-remaining-requests", "59"),
    ///     ("x-ratelimit-reset-requests", "1s"),
    /// ];
    /// let header = |name: &str| headers.iter().find(|(key, _)| *key == name).map(|(_, value)| *value);
    /// let limits = RateLimits::from_headers(header, SystemTime::now());
    /// let requests = limits.get(LimitKind::Requests).unwrap();
    /// assert_eq!((requests.limit, requests.remaining, requests.reset), (60, 59, Duration::from_secs(1)));
    /// assert_eq!(limits.get(LimitKind::Tokens), None);
    /// ```
    pub fn from_headers<'h>(header: impl Fn(&str) -> Option<&'h str>, now: SystemTime) -> RateLimits {
        let mut limits = RateLimits::new();
        for (kind, names) in OPENAI {
            if let Some(limit) = statement(&header, names, go_duration) {
                limits = limits.with(kind, limit);
            }
        }
        let mut anthropic = false;
        for (kind, names) in ANTHROPIC {
            anthropic |= names.iter().any(|name| header(name).is_some());
            let Some(limit) = statement(&header, names, |reset| until(rfc3339(reset)?, now)) else { continue };
            let limit = limit.with_window(ANTHROPIC_WINDOW);
            if limits.get(kind).is_none_or(|openai| limit.remaining < openai.remaining) {
                limits = limits.with(kind, limit);
            }
        }
        if anthropic { limits.with_cached_reads_free() } else { limits }
    }
}

/// One limit's three headers, when all three parse (`reset` read by `reset`).
fn statement<'h>(
    header: &impl Fn(&str) -> Option<&'h str>,
    [limit, remaining, reset_name]: [&str; 3],
    reset: impl Fn(&str) -> Option<Duration>,
) -> Option<Limit> {
    let limit = count(header(limit)?.trim())?;
    let remaining = count(header(remaining)?.trim())?;
    let reset = reset(header(reset_name)?.trim())?;
    Some(Limit::new(limit, remaining, reset))
}

/// A count: ASCII digits only (no sign, no fraction), saturating at `u64::MAX`.
fn count(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    Some(text.bytes().fold(0u64, |count, digit| count.saturating_mul(10).saturating_add(u64::from(digit - b'0'))))
}

/// A Go duration (`time.ParseDuration`'s grammar): an optional `+`, then one or more numbers, each
/// with an optional fraction and a unit (`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`); `"0"` alone
/// is zero, as in Go. A negative duration is no reset; one too large saturates.
fn go_duration(text: &str) -> Option<Duration> {
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let (whole, after) = split_digits(rest);
        let (fraction, after) = match after.strip_prefix('.') {
            Some(after) => split_digits(after),
            None => ("", after),
        };
        if whole.is_empty() && fraction.is_empty() {
            return None;
        }
        let unit_end = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let nanos_per_unit: u128 = match &after[..unit_end] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        total = total.saturating_add(amount(whole, fraction, nanos_per_unit));
        rest = &after[unit_end..];
    }
    Some(from_nanos(total))
}

/// `text`'s leading ASCII digits, and what follows them.
fn split_digits(text: &str) -> (&str, &str) {
    text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()))
}

/// `whole.fraction` units of `nanos_per_unit` nanoseconds each, in nanoseconds, saturating.
fn amount(whole: &str, fraction: &str, nanos_per_unit: u128) -> u128 {
    let whole = whole.bytes().fold(0u128, |n, digit| n.saturating_mul(10).saturating_add(u128::from(digit - b'0')));
    // Past 12 digits a fraction of the largest unit (an hour) is below a nanosecond.
    let (mut part, mut scale) = (0u128, 1u128);
    for digit in fraction.bytes().take(12) {
        part = part * 10 + u128::from(digit - b'0');
        scale *= 10;
    }
    whole.saturating_mul(nanos_per_unit).saturating_add(part * nanos_per_unit / scale)
}

/// `nanos` nanoseconds, [`Duration::MAX`] when they do not fit.
fn from_nanos(nanos: u128) -> Duration {
    match u64::try_from(nanos / 1_000_000_000) {
        Ok(seconds) => Duration::new(seconds, (nanos % 1_000_000_000) as u32),
        Err(_) => Duration::MAX,
    }
}

/// An instant as seconds since the Unix epoch (negative before it) and nanoseconds.
type UnixTime = (i64, u32);

/// How long after `now` the instant is; zero when it is past.
fn until((seconds, nanos): UnixTime, now: SystemTime) -> Option<Duration> {
    let at = match u64::try_from(seconds) {
        Ok(seconds) => SystemTime::UNIX_EPOCH + Duration::new(seconds, nanos),
        Err(_) => return Some(Duration::ZERO),
    };
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// An RFC 3339 date-time, `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±hh:mm)` (`t`, `z` and a space as the
/// separator accepted, as the RFC allows), as seconds since the Unix epoch.
fn rfc3339(text: &str) -> Option<UnixTime> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || !text.is_ascii() {
        return None;
    }
    let punctuation = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if punctuation.iter().any(|&(at, byte)| bytes[at] != byte) || !matches!(bytes[10], b'T' | b't' | b' ') {
        return None;
    }
    let number = |from: usize, to: usize| -> Option<i64> {
        let digits = &text[from..to];
        digits.bytes().all(|byte| byte.is_ascii_digit()).then(|| digits.parse().ok())?
    };
    let (year, month, day) = (number(0, 4)?, number(5, 7)?, number(8, 10)?);
    let (hour, minute, second) = (number(11, 13)?, number(14, 16)?, number(17, 19)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    // 60: a leap second, counted as the first second of the next minute.
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut nanos = 0u32;
    if let Some(after) = rest.strip_prefix('.') {
        let (fraction, after) = split_digits(after);
        if fraction.is_empty() {
            return None;
        }
        nanos = fraction.bytes().chain(std::iter::repeat(b'0')).take(9).fold(0, |n, d| n * 10 + u32::from(d - b'0'));
        rest = after;
    }
    let offset = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let (hours, minutes) = (number_of(*h1, *h2)?, number_of(*m1, *m2)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            let offset = hours * 3600 + minutes * 60;
            if *sign == b'-' { -offset } else { offset }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    Some((days * 86_400 + hour * 3600 + minute * 60 + second - offset, nanos))
}

/// Two ASCII digits as a number.
fn number_of(tens: u8, units: u8) -> Option<i64> {
    (tens.is_ascii_digit() && units.is_ascii_digit()).then(|| i64::from(tens - b'0') * 10 + i64::from(units - b'0'))
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_796_047_327; // 2026-11-30T14:02:07Z

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(NOW)
    }

    fn limits(pairs: &[(&str, &str)]) -> RateLimits {
        RateLimits::from_headers(|name| pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| *value), now())
    }

    fn openai(kind: &str, limit: &str, remaining: &str, reset: &str) -> [(String, String); 3] {
        [
            (format!("x-ratelimit-limit-{kind}"), limit.to_owned()),
            (format!("x-ratelimit-remaining-{kind}"), remaining.to_owned()),
            (format!("x-ratelimit-reset-{kind}"), reset.to_owned()),
        ]
    }

    fn anthropic(kind: &str, limit: &str, remaining: &str, reset: &str) -> [(String, String); 3] {
        [
            (format!("anthropic-ratelimit-{kind}-limit"), limit.to_owned()),
            (format!("anthropic-ratelimit-{kind}-remaining"), remaining.to_owned()),
            (format!("anthropic-ratelimit-{kind}-reset"), reset.to_owned()),
        ]
    }

    /// The limits of these statements' headers.
    fn read(statements: &[[(String, String); 3]]) -> RateLimits {
        read_pairs(&statements.concat())
    }

    fn read_pairs(owned: &[(String, String)]) -> RateLimits {
        let pairs: Vec<(&str, &str)> = owned.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect();
        limits(&pairs)
    }

    #[test]
    fn go_durations_in_every_unit_and_combination() {
        let ms = Duration::from_millis;
        for (text, expected) in [
            ("12ms", ms(12)),
            ("1.5s", ms(1500)),
            ("6m0s", Duration::from_secs(360)),
            ("1h2m3s", Duration::from_secs(3723)),
            ("0s", Duration::ZERO),
            ("0", Duration::ZERO),
            ("2us", Duration::from_micros(2)),
            ("2µs", Duration::from_micros(2)),
            ("2μs", Duration::from_micros(2)),
            ("7ns", Duration::from_nanos(7)),
            ("+1s", Duration::from_secs(1)),
            (".5s", ms(500)),
            ("1.s", Duration::from_secs(1)),
            ("1m30.25s", ms(90_250)),
            ("0.000000001s", Duration::from_nanos(1)),
            ("1.0000000000000000000009h", Duration::from_secs(3600)),
        ] {
            assert_eq!(go_duration(text), Some(expected), "{text}");
        }
    }

    #[test]
    fn what_is_not_a_go_duration_is_no_reset() {
        for text in ["", "20", "1.5", "s", ".s", "1x", "1 s", "-1s", "1s2", "1sm", "ms", "1..5s", "+", "1S", "1e3s"] {
            assert_eq!(go_duration(text), None, "{text:?}");
        }
    }

    #[test]
    fn a_huge_go_duration_saturates() {
        assert_eq!(go_duration("99999999999999999999999999999999999999999h"), Some(Duration::MAX));
        assert_eq!(go_duration(&format!("{}s", u64::MAX)), Some(Duration::from_secs(u64::MAX)));
        assert_eq!(go_duration("9999999999999999999999h9999999999999h"), Some(Duration::MAX));
    }

    #[test]
    fn rfc3339_instants_with_z_an_offset_and_a_fraction() {
        assert_eq!(rfc3339("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(rfc3339("2026-11-30T14:02:07Z"), Some((NOW as i64, 0)));
        assert_eq!(rfc3339("2026-11-30t14:02:07.5z"), Some((NOW as i64, 500_000_000)));
        assert_eq!(rfc3339("2026-11-30 15:02:07.123456789+01:00"), Some((NOW as i64, 123_456_789)));
        assert_eq!(rfc3339("2026-11-30T13:32:07.1234567891-00:30"), Some((NOW as i64, 123_456_789)));
        assert_eq!(rfc3339("2024-02-29T00:00:00Z"), Some((1_709_164_800, 0)));
        assert_eq!(rfc3339("2016-12-31T23:59:60Z"), Some((1_483_228_800, 0)));
        assert_eq!(rfc3339("1969-12-31T23:59:59Z"), Some((-1, 0)));
    }

    #[test]
    fn what_is_not_rfc3339_is_no_reset() {
        for text in [
            "",
            "2026-11-30T14:02:07",
            "2026-11-30T14:02:07+0100",
            "2026-11-30T14:02:07.Z",
            "2026-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2026-11-31T00:00:00Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T14:60:00Z",
            "2026-11-30T14:02:61Z",
            "2026-11-30T14:02:07+24:00",
            "2026-11-30T14:02:07Z ",
            "2026-11-30X14:02:07Z",
            "+026-11-30T14:02:07Z",
            "2026-11-30T14:02:07µZ",
            "Mon, 30 Nov 2026 14:02:07 GMT",
            "60",
        ] {
            assert_eq!(rfc3339(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_openai_family_with_go_duration_resets_and_no_window() {
        let limits = read(&[openai("requests", "500", "499", "120ms"), openai("tokens", "30000", "29000", "2s")]);
        assert_eq!(limits.get(LimitKind::Requests), Some(&Limit::new(500, 499, Duration::from_millis(120))));
        assert_eq!(limits.get(LimitKind::Tokens), Some(&Limit::new(30_000, 29_000, Duration::from_secs(2))));
        assert_eq!(limits.get(LimitKind::Requests).unwrap().window, None);
        assert!(!limits.cached_reads_free);
        assert_eq!(limits.iter().count(), 2);
    }

    #[test]
    fn the_anthropic_family_with_instants_a_minute_window_and_cached_reads_free() {
        let limits = read(&[
            anthropic("requests", "50", "49", "2026-11-30T14:02:08Z"),
            anthropic("tokens", "90000", "80000", "2026-11-30T14:02:07.250Z"),
            anthropic("input-tokens", "40000", "39000", "2026-11-30T15:02:37+01:00"),
            anthropic("output-tokens", "8000", "7000", "2026-11-30T14:03:07Z"),
        ]);
        let minute = Some(Duration::from_secs(60));
        let expect = |limit, remaining, reset| Limit::new(limit, remaining, reset).with_window(Duration::from_secs(60));
        assert_eq!(limits.get(LimitKind::Requests), Some(&expect(50, 49, Duration::from_secs(1))));
        assert_eq!(limits.get(LimitKind::Tokens), Some(&expect(90_000, 80_000, Duration::from_millis(250))));
        assert_eq!(limits.get(LimitKind::InputTokens), Some(&expect(40_000, 39_000, Duration::from_secs(30))));
        assert_eq!(limits.get(LimitKind::OutputTokens), Some(&expect(8000, 7000, Duration::from_secs(60))));
        assert!(limits.iter().all(|(_, limit)| limit.window == minute));
        assert!(limits.cached_reads_free);
    }

    #[test]
    fn a_reset_in_the_past_is_zero() {
        let limits = read(&[anthropic("requests", "50", "0", "2026-11-30T14:02:06.999Z")]);
        assert_eq!(limits.get(LimitKind::Requests).map(|limit| limit.reset), Some(Duration::ZERO));
        let limits = read(&[anthropic("requests", "50", "0", "1969-07-20T20:17:40Z")]);
        assert_eq!(limits.get(LimitKind::Requests).map(|limit| limit.reset), Some(Duration::ZERO));
    }

    #[test]
    fn a_limit_with_a_missing_or_garbage_field_is_absent_and_the_others_stay() {
        let good = openai("tokens", "100", "90", "1s");
        for (field, value) in [(0, "lots"), (1, "-1"), (1, "9.5"), (2, "soon"), (2, "20"), (0, ""), (1, " ")] {
            let mut requests = openai("requests", "10", "9", "1s");
            requests[field].1 = value.to_owned();
            let limits = read(&[requests, good.clone()]);
            assert_eq!(limits.get(LimitKind::Requests), None, "{field} = {value:?}");
            assert_eq!(limits.get(LimitKind::Tokens), Some(&Limit::new(100, 90, Duration::from_secs(1))));
        }
        for missing in 0..3 {
            let mut headers = openai("requests", "10", "9", "1s").to_vec();
            headers.remove(missing);
            assert!(read_pairs(&headers).is_empty(), "without {}", openai("requests", "", "", "")[missing].0);
            let mut headers = anthropic("requests", "10", "9", "2026-11-30T14:02:08Z").to_vec();
            headers.remove(missing);
            let limits = read_pairs(&headers);
            assert!(limits.is_empty() && limits.cached_reads_free, "an anthropic header still says the family");
        }
        assert_eq!(read(&[]), RateLimits::new());
    }

    #[test]
    fn values_are_trimmed_remaining_is_cut_to_the_limit_and_a_zero_limit_is_one() {
        let limits = read(&[openai("requests", " 10 ", "25", " 1s ")]);
        assert_eq!(limits.get(LimitKind::Requests), Some(&Limit::new(10, 10, Duration::from_secs(1))));
        let limits = read(&[openai("requests", "0", "0", "1s")]);
        assert_eq!(limits.get(LimitKind::Requests).map(|limit| (limit.limit, limit.remaining)), Some((1, 0)));
    }

    #[test]
    fn huge_counts_saturate() {
        let huge = "9".repeat(40);
        let limits = read(&[openai("tokens", &huge, &huge, "1h")]);
        assert_eq!(
            limits.get(LimitKind::Tokens).map(|limit| (limit.limit, limit.remaining)),
            Some((u64::MAX, u64::MAX))
        );
        let limits = read(&[anthropic("tokens", &huge, "1", "9999-12-31T23:59:59.999999999Z")]);
        assert!(limits.get(LimitKind::Tokens).unwrap().reset > Duration::from_secs(200 * 365 * 86_400));
    }

    #[test]
    fn mixed_families_keep_each_kind_and_the_tighter_where_both_state_one() {
        let reset = "2026-11-30T14:02:08Z";
        let limits = read(&[
            openai("requests", "100", "40", "1s"),
            openai("tokens", "1000", "100", "1s"),
            anthropic("requests", "50", "45", reset),
            anthropic("tokens", "900", "10", reset),
            anthropic("output-tokens", "80", "70", reset),
        ]);
        assert_eq!(limits.get(LimitKind::Requests), Some(&Limit::new(100, 40, Duration::from_secs(1))));
        let tokens = limits.get(LimitKind::Tokens).unwrap();
        assert_eq!((tokens.limit, tokens.remaining, tokens.window), (900, 10, Some(Duration::from_secs(60))));
        assert_eq!(limits.get(LimitKind::OutputTokens).map(|limit| limit.remaining), Some(70));
        assert_eq!(limits.get(LimitKind::InputTokens), None);
        assert!(limits.cached_reads_free);
    }

    #[test]
    fn the_family_test_knows_both_prefixes_only() {
        assert!(is_rate_limit_header("x-ratelimit-limit-requests"));
        assert!(is_rate_limit_header("anthropic-ratelimit-tokens-reset"));
        assert!(!is_rate_limit_header("retry-after") && !is_rate_limit_header("x-request-id"));
    }

    /// Random bytes in every field never panic, and whatever parses keeps the `Limit` invariants.
    #[test]
    fn random_values_never_panic() {
        let mut rng = fastrand::Rng::with_seed(26);
        let alphabet: Vec<char> = "0123456789.+-:TZtz hmsunµμ\u{0}é9".chars().collect();
        let names: Vec<&str> =
            OPENAI.iter().chain(ANTHROPIC.iter()).flat_map(|(_, names)| names.iter().copied()).collect();
        for _ in 0..20_000 {
            let values: Vec<String> = names
                .iter()
                .map(|_| {
                    let len = rng.usize(0..32);
                    if rng.bool() {
                        (0..len).map(|_| alphabet[rng.usize(..alphabet.len())]).collect()
                    } else {
                        String::from_utf8_lossy(&(0..len).map(|_| rng.u8(..)).collect::<Vec<u8>>()).into_owned()
                    }
                })
                .collect();
            let limits = RateLimits::from_headers(
                |name| names.iter().position(|known| *known == name).map(|at| values[at].as_str()),
                now(),
            );
            for (_, limit) in limits.iter() {
                assert!(limit.limit >= 1 && limit.remaining <= limit.limit);
            }
            for value in &values {
                let _ = (go_duration(value), rfc3339(value));
            }
        }
    }
}
