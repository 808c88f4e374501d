//! The fuzz targets' checks, shared by the targets (`fuzz/fuzz_targets/<target>.rs`) and by the
//! `fuzz_corpus` tests that replay the committed corpora on every `cargo test`, and the replayer
//! itself. Each check is behind the feature of the crate it exercises (`providers`: the runtime's
//! HTTP providers).

#[cfg(feature = "runtime")]
pub mod classify;
#[cfg(feature = "runtime")]
pub mod rate_limits;
mod replay;
#[cfg(feature = "providers")]
pub mod retry_after;
#[cfg(feature = "chaos")]
pub mod scenario;
#[cfg(feature = "providers")]
pub mod sse;

pub use replay::replay;
