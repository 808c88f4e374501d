//! [`Classify`] for genai's errors (feature `genai`; genai 0.7 needs Rust 1.88, above this crate's
//! 1.85): genai keeps an HTTP error's status, headers and body, so the providers' reading of them
//! (`provider::response_error`) gives the verdict and the server's hints.

use genai::resolver::Error as ResolverError;
use genai::webc::{Error as WebError, StreamTimeout};

use super::boxed_classify::by_cause;
use super::{Classification, Classify};
use crate::error::{ModelError, TransportKind};
use crate::provider::{
    BodyEnd, MAX_ERROR_BODY, empty_answer, event_error, malformed, not_a_stream, response_error, undecodable_answer,
};

/// genai's errors, judged as our providers judge the same failure: an HTTP error by its status,
/// headers (`Retry-After`, `retry-after-ms`, `x-should-retry`) and body; its reqwest 0.13 transport
/// errors by the rules of the providers' reqwest; a request it cannot build, a programming error
/// (raised); a missing API key or auth, permanent; a stream cut, a body that is not an answer or
/// an error event inside a stream, as the providers judge them.
///
/// The feature needs Rust 1.88 (genai 0.7's MSRV), above this crate's 1.85.
#[cfg_attr(docsrs, doc(cfg(feature = "genai")))]
impl Classify for genai::Error {
    fn classify(&self) -> Classification {
        use genai::Error as E;
        match self {
            E::ChatReqHasNoMessages { .. }
            | E::LastChatMessageIsNotUser { .. }
            | E::MessageRoleNotSupported { .. }
            | E::MessageContentTypeNotSupported { .. }
            | E::JsonModeWithoutInstruction
            | E::VerbosityParsing { .. }
            | E::ReasoningParsingError { .. }
            | E::ServiceTierParsing { .. }
            | E::PromptCacheRetentionParsing { .. }
            | E::AdapterNotSupported { .. }
            | E::CacheBreakpointNoEligibleContent { .. }
            | E::AdapterKindMismatch { .. }
            | E::ClientBuildFail { .. } => {
                Classification::raise("genai cannot build this request for this model or client: fix the code")
            }
            E::RequiresApiKey { .. } | E::NoAuthResolver { .. } | E::NoAuthData { .. } => {
                Classification::permanent("genai has no API key or auth for the model: configure one")
            }
            E::ModelMapperFailed { cause, .. } | E::Resolver { resolver_error: cause, .. } => resolver(cause),
            E::WebAdapterCall { webc_error, .. } | E::WebModelCall { webc_error, .. } => web(webc_error),
            E::HttpError { status, body, headers, .. } => http_error(status.as_u16(), headers, body).classify(),
            E::NoChatResponse { .. } => empty_answer("genai found no chat response in the answer").classify(),
            E::InvalidJsonResponseElement { info } => malformed("", info, None).classify(),
            E::ChatResponseGeneration { cause, .. } => malformed("", cause, None).classify(),
            E::ChatResponse { body, .. } => event_error(body).classify(),
            E::StreamParse { serde_error, .. } => malformed("", serde_error, None).classify(),
            E::WebStream { error, cause, .. } => by_cause(&**error, own).unwrap_or_else(|| {
                // The stream failed without a typed cause: a cut stream, as the providers judge one.
                let text = format!("stream ended unexpectedly: {cause}");
                ModelError::transport(TransportKind::StreamDropped, text).classify()
            }),
            E::Internal(_) => Classification::permanent(
                "genai failed inside itself (a file, a URL): the same call fails the same way",
            ),
            // A value genai could not read or write as the JSON it expected: an answer's field, as a
            // malformed chunk (the providers' verdict on an answer they cannot decode).
            E::JsonValueExt(error) => malformed("", error, None).classify(),
            E::SerdeJson(error) => malformed("", error, None).classify(),
        }
    }

    /// Every text the server sent without the key: a body, a header's value, a stream's cause, the
    /// JSON genai could not read, a URL.
    fn redact(self, redact: &dyn Fn(&str) -> std::borrow::Cow<'_, str>) -> Self {
        super::genai_redact::genai(self, redact)
    }
}

/// The error our providers make of an HTTP error response, from what genai kept of it.
fn http_error(status: u16, headers: &http::HeaderMap, body: &str) -> ModelError {
    let end = if body.len() > MAX_ERROR_BODY { BodyEnd::Cut } else { BodyEnd::Whole };
    response_error(status, headers, &body.as_bytes()[..body.len().min(MAX_ERROR_BODY)], end)
}

/// The errors of genai's web client.
fn web(error: &WebError) -> Classification {
    match error {
        WebError::ResponseFailedStatus { status, body, headers } => {
            http_error(status.as_u16(), headers, body).classify()
        }
        WebError::ResponseFailedNotJson { content_type, .. } => {
            not_a_stream(http::StatusCode::OK, content_type, "(the client's URL)", None).classify()
        }
        WebError::ResponseFailedInvalidJson { body, cause } => undecodable_answer(body, cause, |_| false).classify(),
        WebError::JsonValueExt(error) => malformed("", error, None).classify(),
        WebError::Reqwest(error) => error.classify(),
    }
}

/// A resolver's failure (the client's own code, or its environment): a missing key is permanent, as
/// is a resolver that refused (the same model resolves the same way); auth data of the wrong shape
/// is a programming error.
fn resolver(error: &ResolverError) -> Classification {
    match error {
        ResolverError::ApiKeyEnvNotFound { .. } => {
            Classification::permanent("the API key's environment variable is not set: set it")
        }
        ResolverError::ResolverAuthDataNotSingleValue => {
            Classification::raise("the auth resolver gave auth data that is not a single value: fix the code")
        }
        ResolverError::Custom(_) => Classification::permanent("the client's resolver refused the model"),
    }
}

/// A genai error a stream boxed (an HTTP error before a stream's first byte travels so), or a
/// streaming timeout.
fn own(error: &(dyn std::error::Error + 'static)) -> Option<Classification> {
    if let Some(error) = error.downcast_ref::<genai::Error>() {
        return Some(error.classify());
    }
    if let Some(error) = error.downcast_ref::<WebError>() {
        return Some(web(error));
    }
    // No headers or no bytes in time: a timeout, as the providers' bounds make either.
    let timeout = error.downcast_ref::<StreamTimeout>()?;
    Some(ModelError::transport(TransportKind::Timeout, format!("model call timed out: {timeout}")).classify())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::ExecAction;
    use genai::ModelIden;
    use genai::adapter::AdapterKind;

    fn model() -> ModelIden {
        ModelIden::new(AdapterKind::OpenAI, "gpt-test")
    }

    #[test]
    fn requests_genai_cannot_build_raise_and_missing_keys_are_permanent() {
        assert_eq!(genai::Error::ChatReqHasNoMessages { model_iden: model() }.classify().action, ExecAction::Raise);
        assert_eq!(genai::Error::JsonModeWithoutInstruction.classify().action, ExecAction::Raise);
        assert_eq!(genai::Error::RequiresApiKey { model_iden: model() }.classify().action, ExecAction::FailPermanently);
        let missing = ResolverError::ApiKeyEnvNotFound { env_name: "OPENAI_API_KEY".into() };
        let error = genai::Error::Resolver { model_iden: model(), resolver_error: missing };
        assert_eq!(error.classify().action, ExecAction::FailPermanently);
    }

    #[test]
    fn an_http_error_keeps_its_headers_hints() {
        let mut headers = http::HeaderMap::new();
        headers.insert("retry-after-ms", http::HeaderValue::from_static("1500"));
        let body = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
        let error = genai::Error::HttpError {
            status: http::StatusCode::TOO_MANY_REQUESTS,
            canonical_reason: "Too Many Requests".into(),
            body: body.into(),
            headers: Box::new(headers.clone()),
        };
        let ours = response_error(429, &headers, body.as_bytes(), BodyEnd::Whole).classify();
        assert_eq!(error.classify(), ours);
        assert_eq!(ours.retry_after, Some(std::time::Duration::from_millis(1500)));
        // The same inside a stream, boxed.
        let streamed =
            genai::Error::WebStream { model_iden: model(), cause: error.to_string(), error: Box::new(error) };
        assert_eq!(streamed.classify(), ours);
    }

    #[test]
    fn streams_cut_or_timed_out_are_retried() {
        let cut = genai::Error::WebStream { model_iden: model(), cause: "gone".into(), error: "gone".into() };
        assert_eq!(cut.classify().action, ExecAction::Retry);
        let stalled =
            genai::Error::WebStream { model_iden: model(), cause: "t".into(), error: Box::new(StreamTimeout::Read) };
        assert_eq!(stalled.classify().action, ExecAction::Retry);
        let page = WebError::ResponseFailedNotJson { content_type: "text/html".into(), body: "<html>".into() };
        let error = genai::Error::WebModelCall { model_iden: model(), webc_error: page };
        assert_eq!(error.classify().action, ExecAction::FailPermanently);
    }
}
