//! The Responses API's error vocabulary: its failure codes with the HTTP status the API gives the
//! same failure, so that a failure on a 200 stream (`response.failed`, an `error` event) classifies
//! as that status would.

use serde_json::{Value, json};

use super::super::super::http::ErrorFacts;
use super::super::super::http::errors::shared_type;
use super::super::finish;

/// This wire's error vocabulary: the codes the Responses API names its failures by, with the HTTP
/// status it gives the same failure, so that a failure on a 200 stream classifies as that status
/// would: `server_is_overloaded` 503, `vector_store_timeout` 504, `invalid_prompt` and the image
/// codes 400 (`server_error`, `rate_limit_exceeded`, `insufficient_quota` and
/// `context_length_exceeded` are the shared spellings'; the last is read as an overflow by its code).
pub(super) fn vocabulary(code: &str) -> Option<(&'static str, u16)> {
    Some(match code {
        "server_is_overloaded" | "overloaded" | "service_unavailable" => ("ServiceUnavailableError", 503),
        "vector_store_timeout" => ("GatewayTimeoutError", 504),
        "context_length_exceeded" | "invalid_prompt" => ("BadRequestError", 400),
        // `invalid_image_url`, `image_too_large`, `failed_to_download_image` and their kin.
        code if code.contains("image") => ("BadRequestError", 400),
        _ => return None,
    })
}

/// An error object of this wire (`{"code", "message"}`, or OpenAI's `{"type", "code", "message"}`),
/// typed by its vocabulary.
pub(super) fn error_facts(error: &Value) -> ErrorFacts {
    ErrorFacts::from_error(error).unwrap_or_default().typed_by(vocabulary)
}

/// A `response.failed`'s `error`. A failure that names nothing either table knows is the server's:
/// a 500.
pub(super) fn failure(error: &Value) -> ErrorFacts {
    let mut facts = error_facts(error);
    let known = facts.typed.is_some() || facts.typed_code().and_then(shared_type).is_some();
    if !known && facts.status.is_none() {
        facts.status = Some(500);
    }
    if facts.message.as_deref().is_none_or(str::is_empty) {
        let code = facts.typed_code().map_or_else(String::new, |code| format!(" (code `{code}`)"));
        facts.message = Some(format!("the response failed (`response.failed`){code} without a message"));
    }
    facts
}

/// An `error` event: its fields at the top level (`{"type": "error", "code", "message", "param"}`:
/// `code` and `message`), or in an `error` object.
pub(super) fn error_event(error: &Value, code: &Value, message: &Value) -> ErrorFacts {
    if error.is_object() {
        return error_facts(error);
    }
    error_facts(&json!({"code": code, "message": message}))
}

/// A response the content filter stopped: permanent (the same request is filtered again), saying
/// so, as every wire says it.
pub(super) fn content_filtered() -> ErrorFacts {
    finish::filtered("`response.incomplete`, reason `content_filter`")
}
