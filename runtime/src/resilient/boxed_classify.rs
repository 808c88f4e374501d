//! [`Classify`] for a boxed error (`Box<dyn Error + Send + Sync>`, tower's `BoxError`): what tower's
//! own layers (timeout, concurrency limit, buffer) and many clients' middleware return. The first
//! error of a type this crate judges, down the chain of sources, decides; else the error is taken
//! as transient, as layer 2 takes an error it does not know (docs/design.md §5).

use std::error::Error;

use super::{Classification, Classify, GaveUp};
use crate::error::ModelError;

impl Classify for Box<dyn Error + Send + Sync> {
    fn classify(&self) -> Classification {
        classify_dyn(&**self)
    }
}

/// The classification of `error` by the first error of a known type in its chain of sources
/// ([`by_cause`]), else transient.
fn classify_dyn(error: &(dyn Error + 'static)) -> Classification {
    if let Some(class) = by_cause(error, |_| None) {
        return class;
    }
    let text = error.to_string();
    // tower's `Elapsed` ("request timed out"), without a dependency on tower for its type.
    let timeout = text.contains("timed out");
    Classification::retry(format!("an error of no type this crate knows is taken as transient: {text}"))
        .with_timeout(timeout)
}

/// The verdict on the first error in `error`'s chain (looking inside I/O errors too, whose `source`
/// skips what they wrap) that a `Classify` here judges: `own`'s (a client's own error type, which a
/// layer may have boxed), the [`GaveUp`] of a `Failure` (what an inner layer stopped stays stopped),
/// a [`ModelError`], a reqwest error, an I/O error. `None` when the chain holds none: the caller says what else it is.
pub(crate) fn by_cause(
    error: &(dyn Error + 'static),
    own: fn(&(dyn Error + 'static)) -> Option<Classification>,
) -> Option<Classification> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(class) = own(error) {
            return Some(class);
        }
        // A call this crate's layers gave up on (a `Failure`'s source): never retried around them.
        if let Some(mark) = error.downcast_ref::<GaveUp>() {
            return Some(mark.classification());
        }
        if let Some(error) = error.downcast_ref::<ModelError>() {
            return Some(error.classify());
        }
        #[cfg(feature = "providers")]
        if let Some(error) = error.downcast_ref::<reqwest::Error>() {
            return Some(error.classify());
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            // What the I/O error wraps says more than its kind (a stream's body error travels so).
            let inner = io.get_ref().and_then(|inner| by_cause(inner, own));
            return Some(inner.unwrap_or_else(|| io.classify()));
        }
        next = error.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::ExecAction;

    #[derive(Debug)]
    struct Wrapped(std::io::Error);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("the upload failed")
        }
    }

    impl Error for Wrapped {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_known_error_down_the_chain_decides() {
        let denied: Box<dyn Error + Send + Sync> =
            Box::new(Wrapped(std::io::Error::from(std::io::ErrorKind::PermissionDenied)));
        assert_eq!(denied.classify().action, ExecAction::FailPermanently);
        let reset: Box<dyn Error + Send + Sync> = Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert_eq!(reset.classify().action, ExecAction::Retry);
    }

    #[test]
    fn an_unknown_error_is_transient_and_a_timeout_says_so() {
        let elapsed: Box<dyn Error + Send + Sync> = "request timed out".into();
        let class = elapsed.classify();
        assert_eq!((class.action, class.timeout), (ExecAction::Retry, true));
        let odd: Box<dyn Error + Send + Sync> = "the queue is full".into();
        assert_eq!((odd.classify().action, odd.classify().timeout), (ExecAction::Retry, false));
    }
}
