//! Small helpers of no concept of their own: an append-only file, an error's causes, text cut to a
//! size, and lines read within a bound.

pub(crate) mod append;
#[cfg(feature = "providers")]
pub(crate) mod causes;
pub(crate) mod cut;
pub mod lines;
