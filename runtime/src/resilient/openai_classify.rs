//! [`Classify`] for async-openai's errors (feature `async-openai`), so that `Resilient` works around
//! any of its calls with the verdicts our providers give the same responses: an API error is read
//! back into the body it came from and through the providers' reading
//! (`provider::response_error`).

use async_openai::error::{ApiErrorResponse, OpenAIError, StreamError};

use super::boxed_classify::by_cause;
use super::redact::{self as redacted, Redact};
use super::{Classification, Classify};
use crate::error::{ModelError, TransportKind};
use crate::provider::{BodyEnd, MAX_ERROR_BODY, malformed, response_error, undecodable_answer};

/// async-openai's errors, judged as our providers judge the same failure: an HTTP error by its
/// status and body, a body that is not the answer, a cut stream, reqwest's transport errors.
///
/// async-openai keeps no response headers, so its errors carry no `Retry-After`,
/// `retry-after-ms` or `x-should-retry`: for the server's hints, put `tower::RetryLayer` in
/// `with_http_service`. A 4xx whose body is not OpenAI's error shape reaches it as
/// `JSONDeserialize`, without its status: it is judged by its body alone.
#[cfg_attr(docsrs, doc(cfg(feature = "async-openai")))]
impl Classify for OpenAIError {
    fn classify(&self) -> Classification {
        match self {
            OpenAIError::Reqwest(error) => error.classify(),
            OpenAIError::ApiError(response) => api_error(response).classify(),
            OpenAIError::JSONDeserialize(error, content) => {
                undecodable_answer(content, error, is_openai_object).classify()
            }
            OpenAIError::FileSaveError(_) | OpenAIError::FileReadError(_) => {
                Classification::permanent("a local file could not be saved or read: retrying the call cannot fix it")
            }
            OpenAIError::StreamError(error) => stream_error(error).classify(),
            OpenAIError::Boxed(error) => by_cause(&**error, own).unwrap_or_else(|| {
                Classification::retry("an error of a layer of the client's own (in `with_http_service`): transient")
            }),
            OpenAIError::InvalidArgument(_) => {
                Classification::raise("async-openai refused the request's arguments: fix the code")
            }
        }
    }

    /// Every text the server sent without the key: an API error's fields, a body that could not be
    /// read, a stream's event, a URL. A local error holds nothing of the server's, and a boxed one
    /// is another layer's (the tower layer's `Failure` is redacted already).
    fn redact(self, redact: Redact<'_>) -> Self {
        match self {
            OpenAIError::Reqwest(error) => OpenAIError::Reqwest(error.redact(redact)),
            OpenAIError::ApiError(mut response) => {
                let error = &mut response.api_error;
                error.message = redacted::text(std::mem::take(&mut error.message), redact);
                error.r#type = redacted::optional(error.r#type.take(), redact);
                error.param = redacted::optional(error.param.take(), redact);
                error.code = redacted::optional(error.code.take(), redact);
                OpenAIError::ApiError(response)
            }
            OpenAIError::JSONDeserialize(error, content) => {
                OpenAIError::JSONDeserialize(redacted::serde(error, redact), redacted::text(content, redact))
            }
            OpenAIError::StreamError(error) => OpenAIError::StreamError(Box::new(match *error {
                StreamError::EventStream(text) => StreamError::EventStream(redacted::text(text, redact)),
                StreamError::UnknownEvent(mut event) => {
                    event.event = redacted::text(event.event, redact);
                    event.data = redacted::text(event.data, redact);
                    event.id = redacted::text(event.id, redact);
                    StreamError::UnknownEvent(event)
                }
            })),
            local => local,
        }
    }
}

/// An async-openai error a layer boxed (a tower layer's `BoxError` becomes `Boxed`).
fn own(error: &(dyn std::error::Error + 'static)) -> Option<Classification> {
    error.downcast_ref::<OpenAIError>().map(Classify::classify)
}

/// The error our providers make of the response an `ApiError` came from: its body rebuilt as
/// OpenAI's `{"error": {"message", "type", "param", "code"}}`, or for a 5xx (whose body async-openai
/// keeps whole as the message, unparsed) that body itself; no headers (async-openai keeps none).
pub(super) fn api_error(response: &ApiErrorResponse) -> ModelError {
    let status = response.status_code.as_u16();
    let error = &response.api_error;
    let kept_whole = response.status_code.is_server_error()
        && error.r#type.is_none()
        && error.param.is_none()
        && error.code.is_none();
    let body = if kept_whole {
        error.message.clone().into_bytes()
    } else {
        let body = serde_json::json!({
            "error": {"message": error.message, "type": error.r#type, "param": error.param, "code": error.code}
        });
        body.to_string().into_bytes()
    };
    // The bound our providers read an error body to.
    let end = if body.len() > MAX_ERROR_BODY { BodyEnd::Cut } else { BodyEnd::Whole };
    response_error(status, &http::HeaderMap::new(), &body[..body.len().min(MAX_ERROR_BODY)], end)
}

/// Whether a JSON value is one of the OpenAI API's objects (each names itself in `object`), or a
/// chat answer: a body that parsed as one but not into the type asked for has a field the client
/// could not read, not another API's body.
fn is_openai_object(value: &serde_json::Value) -> bool {
    value.get("object").is_some_and(serde_json::Value::is_string) || value.get("choices").is_some()
}

/// A stream's failure, as our providers type it: the body cut (a transport error of the event
/// stream) is a dropped stream; bytes the event parser could not read, and an event of a kind the
/// client does not know, a corrupted one.
fn stream_error(error: &StreamError) -> ModelError {
    match error {
        // eventsource-stream's `Transport error: ..`: the body failed mid-way.
        StreamError::EventStream(text) if text.starts_with("Transport error") => ModelError::transport(
            TransportKind::StreamDropped,
            format!("stream ended unexpectedly: the connection dropped mid-way: {text}"),
        ),
        StreamError::EventStream(text) => malformed(text, &"the event stream could not be parsed", None),
        StreamError::UnknownEvent(event) => malformed(&event.data, &format!("unknown event `{}`", event.event), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::ExecAction;
    use async_openai::error::ApiError;

    fn api(status: u16, message: &str, kind: Option<&str>, code: Option<&str>) -> OpenAIError {
        OpenAIError::ApiError(ApiErrorResponse {
            status_code: reqwest::StatusCode::from_u16(status).unwrap(),
            api_error: ApiError {
                message: message.to_owned(),
                r#type: kind.map(str::to_owned),
                param: None,
                code: code.map(str::to_owned),
                misalignment: None,
            },
        })
    }

    #[test]
    fn invalid_arguments_raise_and_files_are_permanent() {
        assert_eq!(OpenAIError::InvalidArgument("no model".into()).classify().action, ExecAction::Raise);
        assert_eq!(OpenAIError::FileReadError("gone".into()).classify().action, ExecAction::FailPermanently);
        assert_eq!(OpenAIError::FileSaveError("full".into()).classify().action, ExecAction::FailPermanently);
    }

    #[test]
    fn an_api_error_gets_the_providers_verdict_on_its_body() {
        let quota = api(429, "You exceeded your current quota", Some("insufficient_quota"), Some("insufficient_quota"));
        let body = br#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        let ours = response_error(429, &http::HeaderMap::new(), body, BodyEnd::Whole).classify();
        assert_eq!(quota.classify(), ours);
        assert_eq!(ours.action, ExecAction::FailPermanently);
        let limited = api(429, "Rate limit reached", Some("requests"), Some("rate_limit_exceeded"));
        assert_eq!(limited.classify().action, ExecAction::Retry);
        // A 5xx's body, kept whole by async-openai, is read as the server sent it.
        let sent = r#"{"error":{"message":"overloaded","type":"server_error"}}"#;
        let ours = response_error(503, &http::HeaderMap::new(), sent.as_bytes(), BodyEnd::Whole).classify();
        assert_eq!(api(503, sent, None, None).classify(), ours);
        // Bounded as the providers bound it.
        let long = api(500, &"x".repeat(MAX_ERROR_BODY * 2), None, None);
        let OpenAIError::ApiError(response) = &long else { unreachable!() };
        assert!(api_error(response).message().ends_with("(error body cut at 16 KiB)"));
    }

    #[test]
    fn boxed_errors_are_judged_by_what_they_are() {
        let boxed = |error: Box<dyn std::error::Error + Send + Sync>| OpenAIError::Boxed(error).classify();
        let io = boxed(Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionReset)));
        assert_eq!(io, std::io::Error::from(std::io::ErrorKind::ConnectionReset).classify());
        let model = ModelError::http(401, "401 bad key");
        assert_eq!(boxed(Box::new(model.clone())), model.classify());
        assert_eq!(boxed(Box::new(OpenAIError::InvalidArgument("x".into()))).action, ExecAction::Raise);
        let unknown = boxed("a concurrency limit's own error".into());
        assert_eq!(unknown.action, ExecAction::Retry);
        assert!(unknown.reason.to_string().contains("a layer of the client's own"), "{}", unknown.reason);
    }

    /// What the tower layer hands async-openai when it gave up with no error of the service's (a
    /// breaker open, the deadline): `Boxed(Failure)`, final for a retry around the client. Before, it
    /// was "an error of a layer of the client's own", transient.
    #[test]
    fn a_failure_of_the_layers_boxed_is_final() {
        use crate::answer::exec_error::ExecErrorKind;
        use crate::resilient::Failure;
        let failure =
            |kind| Failure::<OpenAIError>::of_layer(kind, "request", Vec::new(), (None, 0), Default::default(), None);
        let boxed = OpenAIError::from(failure(ExecErrorKind::Refused));
        assert!(matches!(boxed, OpenAIError::Boxed(_)), "{boxed:?}");
        let class = boxed.classify();
        assert_eq!(class.action, ExecAction::FailPermanently);
        assert_eq!(
            class.reason.to_string(),
            "an inner retry layer gave up (kind `refused`): trying again around it multiplies its calls"
        );
        assert_eq!(OpenAIError::from(failure(ExecErrorKind::Programming)).classify().action, ExecAction::Raise);
    }

    #[test]
    fn bodies_that_are_not_the_answer_are_judged_as_the_providers_judge_them() {
        let undecodable = |content: &str| {
            let error = serde_json::from_str::<async_openai::types::chat::CreateChatCompletionResponse>(content)
                .expect_err("not a chat completion");
            OpenAIError::JSONDeserialize(error, content.to_owned()).classify()
        };
        // Not JSON, or an answer with a field the client cannot read: a corrupted body, retried.
        assert_eq!(undecodable("{\"choices\": [").action, ExecAction::Retry);
        assert_eq!(undecodable(r#"{"object":"chat.completion","choices":"none"}"#).action, ExecAction::Retry);
        // A health check's answer: the base URL is wrong, for good.
        assert_eq!(undecodable(r#"{"status":"ok"}"#).action, ExecAction::FailPermanently);
        // An error object: typed by its code.
        let error = undecodable(r#"{"error":{"message":"Incorrect API key","code":"invalid_api_key"}}"#);
        assert_eq!(error.action, ExecAction::FailPermanently);
    }

    #[test]
    fn a_cut_stream_is_retried() {
        let cut = StreamError::EventStream("Transport error: error decoding response body".into());
        let class = OpenAIError::StreamError(Box::new(cut)).classify();
        assert_eq!(class.action, ExecAction::Retry);
        assert_eq!(stream_error(&StreamError::EventStream("Parse error: x".into())).kind(), "MalformedStreamError");
    }
}
