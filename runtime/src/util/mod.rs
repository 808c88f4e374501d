//! Small helpers of no concept of their own: an append-only file, an error's causes, text cut to a
//! size, lines read within a bound, and the HTTP clients' TLS.

pub(crate) mod append;
#[cfg(any(feature = "providers", feature = "mcp"))]
pub(crate) mod causes;
pub(crate) mod cut;
pub mod lines;
#[cfg(any(feature = "providers", feature = "mcp"))]
pub(crate) mod tls;
