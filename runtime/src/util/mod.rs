//! Small helpers of no concept of their own: an append-only file, an error's causes, text cut to a
//! size, and lines read within a bound.

pub(crate) mod append;
#[cfg(any(feature = "providers", feature = "mcp"))]
pub(crate) mod causes;
pub(crate) mod cut;
pub mod lines;
