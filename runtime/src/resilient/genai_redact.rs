//! genai's errors without the key (`Classify::redact` for `genai::Error`): genai keeps an HTTP
//! error's body and headers, a stream's cause and the JSON it could not read, and shows them in its
//! Display and Debug; a server that echoes the key puts it there.

use genai::webc::Error as WebError;

use super::Classify as _;
use super::redact::{self as redacted, Redact};

/// `error` with every text the server sent (a body, a header's value, a cause, a JSON value, a
/// URL) without the key; the model's name, the status and the kinds stay.
pub(super) fn genai(error: genai::Error, redact: Redact<'_>) -> genai::Error {
    use genai::Error as E;
    match error {
        E::WebAdapterCall { adapter_kind, webc_error } => {
            E::WebAdapterCall { adapter_kind, webc_error: web(webc_error, redact) }
        }
        E::WebModelCall { model_iden, webc_error } => {
            E::WebModelCall { model_iden, webc_error: web(webc_error, redact) }
        }
        E::HttpError { status, canonical_reason, body, mut headers } => {
            redacted::headers(&mut headers, redact);
            let (canonical_reason, body) = (redacted::text(canonical_reason, redact), redacted::text(body, redact));
            E::HttpError { status, canonical_reason, body, headers }
        }
        E::ChatResponseGeneration { model_iden, request_payload, response_body, cause } => E::ChatResponseGeneration {
            model_iden,
            request_payload,
            response_body: Box::new(redacted::json(*response_body, redact)),
            cause: redacted::text(cause, redact),
        },
        E::ChatResponse { model_iden, body } => E::ChatResponse { model_iden, body: redacted::json(body, redact) },
        E::StreamParse { model_iden, serde_error } => {
            E::StreamParse { model_iden, serde_error: redacted::serde(serde_error, redact) }
        }
        E::WebStream { model_iden, cause, error } => {
            E::WebStream { model_iden, cause: redacted::text(cause, redact), error: boxed(error, redact) }
        }
        E::SerdeJson(error) => E::SerdeJson(redacted::serde(error, redact)),
        // The request's own faults and the client's configuration: nothing the server sent.
        other => other,
    }
}

/// The errors of genai's web client, without the key.
fn web(error: WebError, redact: Redact<'_>) -> WebError {
    match error {
        WebError::ResponseFailedNotJson { content_type, body } => WebError::ResponseFailedNotJson {
            content_type: redacted::text(content_type, redact),
            body: redacted::text(body, redact),
        },
        WebError::ResponseFailedInvalidJson { body, cause } => WebError::ResponseFailedInvalidJson {
            body: redacted::text(body, redact),
            cause: redacted::text(cause, redact),
        },
        WebError::ResponseFailedStatus { status, body, mut headers } => {
            redacted::headers(&mut headers, redact);
            WebError::ResponseFailedStatus { status, body: redacted::text(body, redact), headers }
        }
        WebError::Reqwest(error) => WebError::Reqwest(error.redact(redact)),
        other => other,
    }
}

/// The error a stream boxed: genai's own (an HTTP error before the stream's first byte) or its web
/// client's, without the key; another that shows the key, as its text without it.
fn boxed(error: genai::BoxError, redact: Redact<'_>) -> genai::BoxError {
    let error = match error.downcast::<genai::Error>() {
        Ok(own) => return Box::new(genai(*own, redact)),
        Err(error) => error,
    };
    let error = match error.downcast::<WebError>() {
        Ok(web_error) => return Box::new(web(*web_error, redact)),
        Err(error) => error,
    };
    match redact(&error.to_string()) {
        std::borrow::Cow::Owned(shown) => shown.into(),
        std::borrow::Cow::Borrowed(_) => error,
    }
}
