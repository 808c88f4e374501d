//! TEMPORARY: [`Classify`] for `reqwest_middleware::Error` until H1's impl
//! (runtime/src/resilient/middleware_classify.rs) lands on main; deleted at that merge.

use crate::resilient::{Classification, Classify, classify_dyn};

impl Classify for reqwest_middleware::Error {
    fn classify(&self) -> Classification {
        match self {
            Self::Reqwest(error) if error.is_builder() => {
                Classification::raise("the request cannot be built: fix the code")
            }
            Self::Reqwest(error) if error.is_timeout() => {
                Classification::retry("the request timed out").with_timeout(true)
            }
            Self::Reqwest(error) if error.is_connect() => Classification::retry("the connection failed"),
            Self::Reqwest(_) => Classification::retry("the request or its body failed in transit"),
            Self::Middleware(error) => classify_dyn(error.as_ref()),
        }
    }
}
