//! [`Classify`] for reqwest's errors and statuses, behind the HTTP providers' feature (`providers`):
//! the core's `Resilient` names no HTTP client. Here rather than in `provider/`, which this module
//! already depends on (through the retry state's telemetry): the modules stay free of cycles.

use super::{Classification, Classify, HttpStatus};

#[cfg_attr(docsrs, doc(cfg(feature = "providers")))]
impl Classify for reqwest::Error {
    fn classify(&self) -> Classification {
        if self.is_builder() {
            return Classification::raise("the request cannot be built: fix the code");
        }
        if let Some(status) = self.status() {
            return HttpStatus(status.as_u16()).classify();
        }
        // Before the timeout and connect checks: a refused certificate is a failed connect too.
        if let Some(fault) = crate::provider::boundary::configuration_fault(self) {
            return Classification::permanent(fault);
        }
        if self.is_timeout() {
            return Classification::retry("the request timed out").with_timeout(true);
        }
        if self.is_redirect() {
            return Classification::permanent("too many redirects");
        }
        if self.is_connect() {
            return Classification::retry("the connection failed");
        }
        Classification::retry("the request or its body failed in transit")
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "providers")))]
impl Classify for reqwest::StatusCode {
    fn classify(&self) -> Classification {
        HttpStatus(self.as_u16()).classify()
    }
}
