//! Nothing: the crate is its benchmarks (`benches/`).
