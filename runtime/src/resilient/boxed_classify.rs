//! [`Classify`] for a boxed error (`Box<dyn Error + Send + Sync>`, tower's `BoxError`): what tower's
//! own layers (timeout, concurrency limit, buffer) and many clients' middleware return. The first
//! error of a type this crate judges, down the chain of sources, decides; else the error is taken
//! as transient, as layer 2 takes an error it does not know (docs/design.md §5).

use std::error::Error;

use super::{Classification, Classify};
use crate::error::ModelError;

impl Classify for Box<dyn Error + Send + Sync> {
    fn classify(&self) -> Classification {
        classify_dyn(&**self)
    }
}

/// The classification of `error` by the first error of a known type in its chain of sources.
pub(crate) fn classify_dyn(error: &(dyn Error + 'static)) -> Classification {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(class) = known(error) {
            return class;
        }
        next = error.source();
    }
    let text = error.to_string();
    // tower's `Elapsed` ("request timed out"), without a dependency on tower for its type.
    let timeout = text.contains("timed out");
    Classification::retry(format!("an error of no type this crate knows is taken as transient: {text}"))
        .with_timeout(timeout)
}

/// The classification of `error` when its type is one this crate judges.
fn known(error: &(dyn Error + 'static)) -> Option<Classification> {
    if let Some(error) = error.downcast_ref::<ModelError>() {
        return Some(error.classify());
    }
    if let Some(error) = error.downcast_ref::<std::io::Error>() {
        return Some(error.classify());
    }
    #[cfg(feature = "providers")]
    if let Some(error) = error.downcast_ref::<reqwest::Error>() {
        return Some(error.classify());
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
