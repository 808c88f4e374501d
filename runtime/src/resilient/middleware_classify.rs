//! [`Classify`] for reqwest-middleware's errors (feature `reqwest-middleware`): the client's own
//! errors by reqwest's rules, a middleware's by what it wraps.

use std::borrow::Cow;

use super::boxed_classify::by_cause;
use super::{Classification, Classify};

/// reqwest-middleware's errors: `Reqwest` by the same rules as the providers' reqwest errors; a
/// middleware's (`anyhow`) by the first error in its chain a `Classify` here judges (an I/O error,
/// a reqwest error, a [`ModelError`](crate::provider::ModelError)), else transient, as an error of the
/// client's own stack.
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest-middleware")))]
impl Classify for reqwest_middleware::Error {
    fn classify(&self) -> Classification {
        match self {
            reqwest_middleware::Error::Reqwest(error) => error.classify(),
            reqwest_middleware::Error::Middleware(error) => by_cause(&**error, own)
                .unwrap_or_else(|| Classification::retry("an error of a middleware of the client's own: transient")),
        }
    }

    /// The client's error without a URL that shows the key; a middleware's error is its own (the
    /// tower layer's `Failure` is redacted already).
    fn redact(self, redact: &dyn Fn(&str) -> Cow<'_, str>) -> Self {
        match self {
            reqwest_middleware::Error::Reqwest(error) => reqwest_middleware::Error::Reqwest(error.redact(redact)),
            middleware => middleware,
        }
    }
}

/// A reqwest-middleware error a middleware wrapped again.
fn own(error: &(dyn std::error::Error + 'static)) -> Option<Classification> {
    error.downcast_ref::<reqwest_middleware::Error>().map(Classify::classify)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::ExecAction;
    use crate::provider::ModelError;

    #[test]
    fn a_middlewares_error_is_judged_by_what_it_wraps() {
        let io = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let wrapped = reqwest_middleware::Error::middleware(io);
        assert_eq!(wrapped.classify().action, ExecAction::FailPermanently);
        let model = ModelError::http(429, "429 slow down").with_retry_after(std::time::Duration::from_secs(2));
        let wrapped = reqwest_middleware::Error::middleware(model.clone());
        assert_eq!(wrapped.classify(), model.classify());
        let unknown = reqwest_middleware::Error::middleware(std::fmt::Error);
        assert_eq!(unknown.classify().action, ExecAction::Retry);
        assert!(unknown.classify().reason.to_string().contains("a middleware of the client's own"));
        // The client's own error, by reqwest's rules; wrapped again by a middleware, the same.
        let tls = crate::util::tls::client_config().unwrap();
        let client = reqwest::Client::builder().tls_backend_preconfigured(tls).build().unwrap();
        let built = || client.get("http://[::1").build().expect_err("not a URL");
        assert_eq!(reqwest_middleware::Error::Reqwest(built()).classify().action, ExecAction::Raise);
        let again = reqwest_middleware::Error::middleware(reqwest_middleware::Error::Reqwest(built()));
        assert_eq!(again.classify().action, ExecAction::Raise);
    }

    /// What `RetryMiddleware` returns when it gave up with no error of the chain's: final for a
    /// retry around the client (before, "a middleware of the client's own", transient).
    #[test]
    fn the_layers_failure_inside_a_middleware_error_is_final() {
        use crate::answer::exec_error::ExecErrorKind;
        use crate::resilient::Failure;
        let failure = Failure::<reqwest_middleware::Error>::of_layer(
            ExecErrorKind::Exhausted,
            "request",
            Vec::new(),
            (None, 0),
            std::time::Duration::ZERO,
            None,
        );
        let class = reqwest_middleware::Error::middleware(failure).classify();
        assert_eq!(class.action, ExecAction::FailPermanently);
        assert!(class.reason.to_string().starts_with("an inner retry layer gave up (kind `exhausted`)"));
    }
}
