//! Small helpers of no concept of their own: an append-only file, an error's causes, and text cut
//! to a size.

pub(crate) mod append;
#[cfg(feature = "providers")]
pub(crate) mod causes;
pub(crate) mod cut;
