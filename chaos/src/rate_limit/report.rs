//! The headers each wire reports a scenario's rate limit in, as the buckets stand after a
//! request's charge, and the time formats they need: Go durations (OpenAI's resets) and RFC 3339
//! instants (Anthropic's).

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Level;
use crate::wire::RateLimitHeaders;

/// The rate-limit headers of `family` for `levels`; `now` is the wall clock Anthropic's reset
/// instants count from.
pub(crate) fn headers(
    family: Option<RateLimitHeaders>,
    levels: &[Level],
    now: SystemTime,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for level in levels {
        let (openai, anthropic) = level.kind.names();
        let (names, reset) = match family {
            Some(RateLimitHeaders::OpenAi) => match openai {
                Some(names) => (names, go_duration(level.until_full)),
                None => continue,
            },
            Some(RateLimitHeaders::Anthropic) => (anthropic, rfc3339(now + level.until_full)),
            None => continue,
        };
        let [limit, remaining, reset_name] = names;
        out.push((limit, level.limit.to_string()));
        out.push((remaining, level.remaining.to_string()));
        out.push((reset_name, reset));
    }
    out
}

/// `d` in whole milliseconds, rounded up.
pub(super) fn ceil_ms(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// `d` as Go's `time.Duration` prints it, rounded up to the millisecond: `0s`, `500ms`, `1.5s`,
/// `1m0.5s`, `1h2m3s`.
pub(crate) fn go_duration(d: Duration) -> String {
    let ms = ceil_ms(d);
    if ms < 1000 {
        return if ms == 0 { "0s".to_owned() } else { format!("{ms}ms") };
    }
    let (hours, minutes, seconds, fraction) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    let mut out = String::new();
    if hours > 0 {
        let _ = write!(out, "{hours}h");
    }
    if hours > 0 || minutes > 0 {
        let _ = write!(out, "{minutes}m");
    }
    let _ = write!(out, "{seconds}");
    if fraction > 0 {
        let digits = format!("{fraction:03}");
        let _ = write!(out, ".{}", digits.trim_end_matches('0'));
    }
    out.push('s');
    out
}

/// `at` as an RFC 3339 instant in UTC with milliseconds, rounded up: `2026-12-01T18:55:00.500Z`.
pub(crate) fn rfc3339(at: SystemTime) -> String {
    let ms = at.duration_since(UNIX_EPOCH).map_or(0, ceil_ms);
    let (days, in_day) = (ms / 86_400_000, ms % 86_400_000);
    let (year, month, day) = civil(days);
    let (h, m, s, frac) = (in_day / 3_600_000, in_day / 60_000 % 60, in_day / 1000 % 60, in_day % 1000);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{frac:03}Z")
}

/// The calendar date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let (era, doe) = (z / 146_097, z % 146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_read_as_go_prints_them() {
        let ms = Duration::from_millis;
        let cases = [
            (ms(0), "0s"),
            (Duration::from_nanos(1), "1ms"),
            (ms(500), "500ms"),
            (ms(1000), "1s"),
            (ms(1500), "1.5s"),
            (ms(59_999), "59.999s"),
            (ms(60_500), "1m0.5s"),
            (ms(3_723_000), "1h2m3s"),
            (ms(3_600_000), "1h0m0s"),
            (ms(1_020), "1.02s"),
        ];
        for (d, text) in cases {
            assert_eq!(go_duration(d), text, "{d:?}");
        }
    }

    #[test]
    fn instants_are_rfc3339_in_utc_with_milliseconds() {
        let at = |ms: u64| rfc3339(UNIX_EPOCH + Duration::from_millis(ms));
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        // 2026-12-01T18:55:00.5Z: 20_788 days after the epoch.
        assert_eq!(at(20_788 * 86_400_000 + (18 * 3600 + 55 * 60) * 1000 + 500), "2026-12-01T18:55:00.500Z");
        // A leap day, and the last millisecond of a year.
        assert_eq!(at(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(946_684_799_999), "1999-12-31T23:59:59.999Z");
    }
}
