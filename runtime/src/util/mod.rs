//! Small helpers of no concept of their own: an append-only file, an error's causes, text cut to a
//! size, and the HTTP clients' TLS.

pub(crate) mod append;
#[cfg(feature = "providers")]
pub(crate) mod causes;
pub(crate) mod cut;
#[cfg(feature = "providers")]
pub(crate) mod tls;
