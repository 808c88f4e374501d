//! Nothing: the crate is its tests (`tests/ui.rs`).
