//! [`Classify`] for reqwest's errors and statuses, behind the HTTP providers' feature (`providers`):
//! the core's `Resilient` names no HTTP client. Here rather than in `provider/`, which this module
//! already depends on (through the retry state's telemetry): the modules stay free of cycles.
//!
//! One reqwest (0.13): the providers' and the one async-openai, reqwest-middleware and genai are
//! on, so a user's client and ours get the same rules.

use std::borrow::Cow;

use super::{Classification, Classify, HttpStatus};

/// The verdict on a failed request of a reqwest client.
fn judge(error: &reqwest::Error) -> Classification {
    if error.is_builder() {
        return Classification::raise("the request cannot be built: fix the code");
    }
    if let Some(status) = error.status() {
        return HttpStatus(status.as_u16()).classify();
    }
    // Before the timeout and connect checks: a refused certificate is a failed connect too.
    let in_body = error.is_body() || error.is_decode();
    if let Some(fault) = crate::provider::boundary::configuration_fault(error, in_body) {
        return Classification::permanent(fault);
    }
    if error.is_timeout() {
        return Classification::retry("the request timed out").with_timeout(true);
    }
    if error.is_redirect() {
        return Classification::permanent("too many redirects");
    }
    if error.is_connect() {
        return Classification::retry("the connection failed");
    }
    Classification::retry("the request or its body failed in transit")
}

#[cfg_attr(docsrs, doc(cfg(feature = "providers")))]
impl Classify for reqwest::Error {
    fn classify(&self) -> Classification {
        judge(self)
    }

    /// Without its URL when the URL shows a piece of the key (`?key=...`): the rest of what it says
    /// (its kind, its cause) holds nothing the server sent.
    fn redact(self, redact: &dyn Fn(&str) -> Cow<'_, str>) -> Self {
        let shows_key = self.url().is_some_and(|url| matches!(redact(url.as_str()), Cow::Owned(_)));
        if shows_key { self.without_url() } else { self }
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "providers")))]
impl Classify for reqwest::StatusCode {
    fn classify(&self) -> Classification {
        HttpStatus(self.as_u16()).classify()
    }
}

#[cfg(test)]
mod tests {
    use super::super::boxed_classify::by_cause;
    use super::*;
    use crate::classify::ExecAction;

    fn none(_: &(dyn std::error::Error + 'static)) -> Option<Classification> {
        None
    }

    #[derive(Debug)]
    struct Layer(Box<dyn std::error::Error + Send + Sync>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a layer failed")
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&*self.0)
        }
    }

    #[test]
    fn a_request_that_cannot_be_built_is_raised_even_inside_an_io_error() {
        // A URL that cannot be parsed: a builder error, raised (a programming error).
        let tls = crate::util::tls::client_config().unwrap();
        let client = reqwest::Client::builder().tls_backend_preconfigured(tls).build().unwrap();
        let error = client.get("http://[::1").build().expect_err("not a URL");
        assert_eq!(error.classify().action, ExecAction::Raise);
        // Inside an I/O error, as a stream's body error travels.
        assert_eq!(by_cause(&std::io::Error::other(error), none).map(|class| class.action), Some(ExecAction::Raise));
    }

    #[test]
    fn the_chain_is_judged_by_its_first_known_error() {
        let io = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let class = by_cause(&Layer(Box::new(io)), none).unwrap();
        assert_eq!(class.action, ExecAction::FailPermanently);
        // Inside an I/O error: what it wraps, not its kind.
        let model = crate::provider::ModelError::http(401, "401 bad key");
        let wrapped = std::io::Error::other(model.clone());
        assert_eq!(by_cause(&wrapped, none), Some(model.classify()));
        // A chain of nothing known.
        let text: Box<dyn std::error::Error + Send + Sync> = "a layer's own words".into();
        assert_eq!(by_cause(&Layer(text), none), None);
    }
}
