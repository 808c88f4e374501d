//! Small helpers of no concept of their own: an append-only file, an error's causes, text cut to a
//! size, a stable hash, and the HTTP clients' TLS.

pub(crate) mod append;
#[cfg(feature = "providers")]
pub(crate) mod causes;
pub(crate) mod cut;
pub(crate) mod fnv;
#[cfg(feature = "providers")]
pub(crate) mod tls;
