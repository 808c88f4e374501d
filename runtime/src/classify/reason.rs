use std::fmt;

use crate::error::TransportKind;
use crate::message::StopReason;

/// Which rule decided a verdict, for logs, traces and `agentic classify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// Session rule 1: the call did not fail.
    NotAnError(StopReason),
    /// Context overflow, by the provider's code.
    OverflowCode(&'static str),
    /// Context overflow, by an overflow pattern.
    OverflowPattern(&'static str),
    /// The server's `x-should-retry` header.
    ShouldRetry(bool),
    /// Quota or billing exhausted, by the provider's code.
    QuotaCode(&'static str),
    /// Quota or billing exhausted, by a quota text.
    QuotaText(&'static str),
    /// A quota spent, by what the error body states of its limit: none remaining until a reset an
    /// hour or more away (OpenRouter's `metadata.headers`, its free models' daily quota).
    QuotaUntilReset,
    /// A transient HTTP status (408, 409, 425, 429, 5xx).
    RetryableStatus(u16),
    /// HTTP 498, Groq's flex tier at capacity: transient ("try again later"), a status of its own
    /// that no other server gives this meaning.
    FlexTierCapacity,
    /// A 4xx status other than 408, 409, 425, 429, or a 3xx (a redirect, not followed).
    PermanentStatus(u16),
    /// A transport failure (connect, timeout, reset, a broken stream: transient; a refused
    /// certificate, a bad response head: permanent, see [`TransportKind::is_permanent`]).
    Transport(TransportKind),
    /// Session rule 6: an empty error message, the sign of a dropped stream.
    EmptyMessage,
    /// Session rule 7: a retry pattern matched.
    RetryPattern(&'static str),
    /// Session rule 7: no retry pattern matched.
    NoRetryPattern,
    /// Exec rule 1: a programming error of this kind.
    Programming(&'static str),
    /// Exec rule 3: a permanent marker matched.
    PermanentMarker(&'static str),
    /// Exec: nothing marks the failure as permanent, so it is worth another attempt.
    NotPermanent,
    /// Exec: the validator rejected the reply.
    Rejected,
    /// Exec: the answer is not JSON of the type asked for (`Runtime::exec_json`).
    Unparsable,
    /// Exec: the JSON answer was cut by the token limit (stop reason `length`).
    Truncated,
    /// A successful HTTP response that is no answer at all: a body that is neither an event stream
    /// nor JSON (a proxy's login page), or JSON that is not the wire's answer (a health check, a
    /// models list): a wrong base URL, and the same request gets the same body.
    NotAStream,
    /// Two calls of the exec failed to decode on the same shape (a field of a type the wire does
    /// not read, a finish reason it does not know): a format this client does not read, not a
    /// corrupted stream, so asking again gets the same.
    Unreadable,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::NotAnError(stop) => write!(f, "stop_reason is \"{}\", not \"error\"", stop.name()),
            Reason::OverflowCode(code) => write!(f, "context overflow: provider code \"{code}\""),
            Reason::OverflowPattern(pattern) => write!(f, "context overflow: matched \"{pattern}\""),
            Reason::ShouldRetry(value) => write!(f, "server sent x-should-retry: {value}"),
            Reason::QuotaCode(code) => write!(f, "quota exhausted: provider code \"{code}\""),
            Reason::QuotaText(pattern) => write!(f, "quota exhausted: matched \"{pattern}\""),
            Reason::QuotaUntilReset => {
                f.write_str("quota exhausted: the body states none remaining until a reset an hour or more away")
            }
            Reason::RetryableStatus(status) => write!(f, "HTTP {status} is transient"),
            Reason::FlexTierCapacity => f.write_str("HTTP 498: the flex tier is at capacity (Groq), transient"),
            Reason::PermanentStatus(status @ 300..=399) => {
                write!(f, "HTTP {status} is permanent (a redirect of a POST is never followed)")
            }
            Reason::PermanentStatus(status) => {
                write!(f, "HTTP {status} is permanent (a 4xx other than 408, 409, 425, 429)")
            }
            Reason::Transport(kind) if kind.is_permanent() => {
                write!(f, "transport failure ({}) is permanent: fix the configuration", kind.name())
            }
            Reason::Transport(kind) => write!(f, "transport failure ({}) is transient", kind.name()),
            Reason::EmptyMessage => f.write_str("empty error message (a dropped stream)"),
            Reason::RetryPattern(pattern) => write!(f, "matched retry pattern \"{pattern}\""),
            Reason::NoRetryPattern => f.write_str("matched no retry pattern"),
            Reason::Programming(kind) => write!(f, "programming error ({kind}): fix the code, retrying cannot help"),
            Reason::PermanentMarker(marker) => write!(f, "matched permanent marker \"{marker}\""),
            Reason::NotPermanent => f.write_str("no permanent marker, status or code"),
            Reason::Rejected => f.write_str("the validator rejected the reply"),
            Reason::Unparsable => f.write_str("the answer is not the JSON asked for"),
            Reason::Truncated => f.write_str("the JSON answer was cut by the token limit"),
            Reason::NotAStream => f.write_str(
                "the server's 2xx is not a model's answer (a page, or JSON of another API): the same request gets the same body",
            ),
            Reason::Unreadable => f.write_str(
                "the answer failed to decode the same way on two calls: a format this client does not read, not a corrupted stream",
            ),
        }
    }
}
