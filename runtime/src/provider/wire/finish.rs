//! How an answer ends, judged alike on every wire: a filter's stop is a permanent error saying so
//! (never an answer, whatever text came before it), a server's own failure a transient one, and a
//! finish reason a wire does not know no answer at all (a shape this client does not read). Each
//! wire keeps its own spellings; the failures they come to are written here once.

use super::super::http::{DecodeError, ErrorFacts};

/// An answer a content filter (or a refusal classifier) stopped: permanent, since the same request
/// is stopped again, as the 400 the API answers a refused prompt with; `field` says what the wire
/// sent (`` `finish_reason` `content_filter` ``), coded `content_filter` on every wire.
#[cold]
pub(super) fn filtered(field: &str) -> ErrorFacts {
    ErrorFacts {
        message: Some(format!(
            "the answer was stopped by the content filter ({field}): the same request would be stopped \
             again; change the prompt"
        )),
        code: Some("content_filter".to_owned()),
        typed: Some(("ContentFilterError", 400)),
        ..ErrorFacts::default()
    }
}

/// An answer the server ended as failed (`finish_reason: "error"`, which OpenRouter and Mistral
/// send when the model behind them broke off): the server's failure, a 502 as a gateway reports
/// one, so transient. Text streamed before it is no answer.
#[cold]
pub(super) fn server_failed(field: &str) -> ErrorFacts {
    ErrorFacts {
        message: Some(format!("the server ended the answer as failed ({field}): the model broke off mid-answer")),
        code: Some("server_error".to_owned()),
        status: Some(502),
        typed: Some(("BadGatewayError", 502)),
        ..ErrorFacts::default()
    }
}

/// A finish reason this wire does not know: whether the answer is complete, cut or refused cannot
/// be told, so it is not an answer. A shape this client does not read: the same reason on a
/// second call stops the exec, naming it.
#[cold]
pub(super) fn unknown(field: &str, reason: &str) -> DecodeError {
    DecodeError::unreadable(format!("`{field}` {reason:?} is not a finish reason this client knows"))
}
