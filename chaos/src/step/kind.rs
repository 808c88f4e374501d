//! The one table of step kinds: each kind's variant, the type of its settings, its name in
//! scenario files and the journal, and its doc, written once. [`StepKind`], [`Step`],
//! [`Step::kind`], [`StepKind::as_str`] and [`StepKind::ALL`] are made from it; the scenario
//! format reads the names through serde, and a test checks that the crate docs' table of steps
//! lists [`StepKind::ALL`] in order.

use serde::{Deserialize, Serialize};

use super::{
    BadHead, BareJsonError, Completion, EmptyChunkFlood, EndlessJson, EndlessText, Hang, HttpError, Interrupt,
    KeepAliveFlood, Malformed, NotAnAnswer, Redirect, SseError, Stall, ToolUse, WrongContentType,
};

/// Declares the step kinds: `Variant(Settings) = "name"`, each with its doc.
macro_rules! step_kinds {
    ($($(#[doc = $doc:literal])* $variant:ident $(($settings:ty))? = $name:literal,)*) => {
        /// The kind of a [`Step`], as named in scenario files and in the [journal](crate::JournalEntry).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum StepKind {
            $($(#[doc = $doc])* #[serde(rename = $name)] $variant,)*
        }

        impl StepKind {
            /// Every kind, in the order the crate docs list them.
            pub const ALL: &'static [StepKind] = &[$(Self::$variant),*];

            /// The snake_case name used in scenario files and in the journal, e.g. `"http_error"`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }
        }

        /// What the server does with one request.
        ///
        /// Build a step with one of the constructors (`Step::ok`, `Step::http_error`, ...), refine
        /// it with the builder methods of the type the constructor returns, and hand it to
        /// [`Scenario::then`](crate::Scenario::then), which takes anything that converts into a
        /// `Step`.
        ///
        /// # Examples
        ///
        /// ```
        /// use agentic_chaos::{Step, StepKind};
        ///
        /// let step: Step = Step::http_error(429).retry_after_secs(2).into();
        /// assert_eq!(step.kind(), StepKind::HttpError);
        /// assert_eq!(Step::drop_stream(3).into_step().kind(), StepKind::DropStream);
        /// ```
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum Step {
            $($(#[doc = $doc])* $variant $(($settings))?,)*
        }

        impl Step {
            /// The kind of this step.
            pub fn kind(&self) -> StepKind {
                match self {
                    $(Self::$variant { .. } => StepKind::$variant,)*
                }
            }
        }
    };
}

step_kinds! {
    /// A complete, successful answer.
    Ok(Completion) = "ok",
    /// An HTTP error status with a provider-shaped body.
    HttpError(HttpError) = "http_error",
    /// The provider's real 400 "context too long" answer.
    ContextOverflow(HttpError) = "context_overflow",
    /// The provider's real 401 "bad API key" answer.
    InvalidApiKey(HttpError) = "invalid_api_key",
    /// The request is read and the socket closed without any response.
    CloseBeforeHeaders = "close_before_headers",
    /// The stream is cut after some chunks, without its HTTP end: the client sees a body error,
    /// not a clean end.
    DropStream(Interrupt) = "drop_stream",
    /// The stream ends cleanly after some chunks, without its final events (`message_stop`,
    /// `[DONE]`).
    Truncate(Interrupt) = "truncate",
    /// An SSE error event after some chunks, then a clean end of the body.
    SseError(SseError) = "sse_error",
    /// A `data:` line that is not valid JSON (or JSON no client reads) after some chunks, then the
    /// rest of the stream.
    MalformedChunk(Malformed) = "malformed_chunk",
    /// A pause before the headers or after some chunks, then the rest of the answer.
    Stall(Stall) = "stall",
    /// No answer at all (or no more of it) until the client hangs up or the server stops.
    Hang(Hang) = "hang",
    /// After the headers (and maybe some chunks), keep-alive comments or pings and nothing else,
    /// until the client hangs up.
    KeepAliveFlood(KeepAliveFlood) = "keep_alive_flood",
    /// Valid chunks with empty text, endlessly, until the client hangs up.
    EmptyChunkFlood(EmptyChunkFlood) = "empty_chunk_flood",
    /// Valid text chunks, endlessly, until the client hangs up.
    EndlessText(EndlessText) = "endless_text",
    /// A 200 `application/json` body that starts a JSON object and never ends.
    EndlessJson(EndlessJson) = "endless_json",
    /// A 200 whose content type is not an event stream nor JSON (an HTML login page by default).
    WrongContentType(WrongContentType) = "wrong_content_type",
    /// A redirect (301, 302, 303, 307 or 308) with an empty body, to another URL or back to the
    /// request's own.
    Redirect(Redirect) = "redirect",
    /// A 200 that is not an answer: an empty object, a health check, a list of models, a stream
    /// with no content.
    NotAnAnswer(NotAnAnswer) = "not_an_answer",
    /// A response head past a client's limits (too many headers, a huge one) or malformed, then
    /// the socket closes.
    BadHead(BadHead) = "bad_head",
    /// A 200 event stream whose body is the provider's JSON error as one bare line.
    BareJsonError(BareJsonError) = "bare_json_error",
    /// A successful answer whose content is one or more tool calls.
    ToolUse(ToolUse) = "tool_use",
}

impl std::fmt::Display for StepKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kinds the crate docs' table of steps lists, in order: the first cell of each row
    /// between `# Steps` and the next heading.
    fn documented_kinds() -> Vec<String> {
        let docs = include_str!("../lib.rs");
        let steps = docs.split("//! # Steps").nth(1).expect("the crate docs have a `# Steps` section");
        let section = steps.split("//! # ").next().unwrap_or_default();
        section
            .lines()
            .filter_map(|line| line.strip_prefix("//! | `"))
            .filter_map(|row| row.split_once('`').map(|(kind, _)| kind.to_owned()))
            .collect()
    }

    #[test]
    fn the_crate_docs_list_every_kind_in_order() {
        let names: Vec<&str> = StepKind::ALL.iter().map(|kind| kind.as_str()).collect();
        assert_eq!(documented_kinds(), names);
    }

    #[test]
    fn names_are_what_serde_reads_and_writes() {
        for kind in StepKind::ALL {
            let json = serde_json::to_string(kind).unwrap();
            assert_eq!(json, format!("\"{kind}\""));
            assert_eq!(serde_json::from_str::<StepKind>(&json).unwrap(), *kind);
        }
    }
}
