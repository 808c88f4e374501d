//! [`Classify`] for reqwest's errors and statuses, behind the HTTP providers' feature (`providers`):
//! the core's `Resilient` names no HTTP client. Here rather than in `provider/`, which this module
//! already depends on (through the retry state's telemetry): the modules stay free of cycles.
//!
//! Both reqwests get the same rules from one function ([`judge`]): 0.12 (the providers') and 0.13
//! (the one async-openai, reqwest-middleware and genai are on), whose errors say the same things and
//! wrap the same rustls 0.23 and hyper 1.

use std::borrow::Cow;

use super::{Classification, Classify, HttpStatus};

/// What a reqwest error says of itself, in the words both reqwests use.
struct Facts<'e> {
    error: &'e (dyn std::error::Error + 'static),
    builder: bool,
    status: Option<u16>,
    in_body: bool,
    timeout: bool,
    redirect: bool,
    connect: bool,
}

/// The facts of a reqwest error of either version (their methods have the same names).
macro_rules! facts {
    ($error:expr) => {{
        let error = $error;
        Facts {
            error,
            builder: error.is_builder(),
            status: error.status().map(|status| status.as_u16()),
            in_body: error.is_body() || error.is_decode(),
            timeout: error.is_timeout(),
            redirect: error.is_redirect(),
            connect: error.is_connect(),
        }
    }};
}

/// A reqwest error of either version without its URL, when the URL shows a piece of the key: the
/// rest of what it says (its kind, its cause) holds nothing the server sent.
macro_rules! redacted {
    ($error:expr, $redact:expr) => {{
        let error = $error;
        let shows_key = error.url().is_some_and(|url| matches!($redact(url.as_str()), Cow::Owned(_)));
        if shows_key { error.without_url() } else { error }
    }};
}

/// The verdict on a failed request of a reqwest client.
fn judge(facts: Facts<'_>) -> Classification {
    if facts.builder {
        return Classification::raise("the request cannot be built: fix the code");
    }
    if let Some(status) = facts.status {
        return HttpStatus(status).classify();
    }
    // Before the timeout and connect checks: a refused certificate is a failed connect too.
    if let Some(fault) = crate::provider::boundary::configuration_fault(facts.error, facts.in_body) {
        return Classification::permanent(fault);
    }
    if facts.timeout {
        return Classification::retry("the request timed out").with_timeout(true);
    }
    if facts.redirect {
        return Classification::permanent("too many redirects");
    }
    if facts.connect {
        return Classification::retry("the connection failed");
    }
    Classification::retry("the request or its body failed in transit")
}

#[cfg_attr(docsrs, doc(cfg(feature = "providers")))]
impl Classify for reqwest::Error {
    fn classify(&self) -> Classification {
        judge(facts!(self))
    }

    /// Without its URL when the URL shows a piece of the key (`?key=...`).
    fn redact(self, redact: &dyn Fn(&str) -> Cow<'_, str>) -> Self {
        redacted!(self, redact)
    }
}

/// reqwest 0.13's errors, by the same rules as 0.12's (the `async-openai`, `reqwest-middleware` and
/// `genai` features: the clients of those crates are on 0.13). Its `StatusCode` is 0.12's (both are
/// `http::StatusCode`), judged by the impl below.
#[cfg(any(feature = "async-openai", feature = "reqwest-middleware", feature = "genai"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "async-openai", feature = "reqwest-middleware", feature = "genai"))))]
impl Classify for reqwest_013::Error {
    fn classify(&self) -> Classification {
        judge(facts!(self))
    }

    /// Without its URL when the URL shows a piece of the key (`?key=...`).
    fn redact(self, redact: &dyn Fn(&str) -> Cow<'_, str>) -> Self {
        redacted!(self, redact)
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "providers")))]
impl Classify for reqwest::StatusCode {
    fn classify(&self) -> Classification {
        HttpStatus(self.as_u16()).classify()
    }
}

#[cfg(all(test, any(feature = "async-openai", feature = "reqwest-middleware", feature = "genai")))]
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
    fn both_reqwests_get_the_same_verdicts() {
        // A URL that cannot be parsed: a builder error in both, raised (a programming error).
        let old = reqwest::Client::new().get("http://[::1").build().expect_err("not a URL");
        let new = reqwest_013::Client::new().get("http://[::1").build().expect_err("not a URL");
        assert_eq!(new.classify(), old.classify());
        assert_eq!(new.classify().action, ExecAction::Raise);
        // Inside an I/O error, as a stream's body error travels.
        assert_eq!(by_cause(&std::io::Error::other(new), none).map(|class| class.action), Some(ExecAction::Raise));
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
