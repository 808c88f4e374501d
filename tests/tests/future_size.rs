//! The future of `exec` stays small enough that tokio runs it in place: `block_on` and `spawn` box
//! any future over 2 KiB in debug builds (16 KiB in release), an allocation on every exec that the
//! allocation test (`alloc.rs`) would then count against the runtime.

use agentic_runtime::{Runtime, ScriptedProvider};

/// Tokio's threshold in debug builds (`BOX_FUTURE_THRESHOLD`).
const TOKIO_BOXES_ABOVE: usize = 2048;

#[test]
fn the_exec_future_fits_under_tokios_boxing_threshold() {
    let runtime = Runtime::new(ScriptedProvider::new([]));
    let size = std::mem::size_of_val(&runtime.exec("the question"));
    assert!(size <= TOKIO_BOXES_ABOVE, "exec's future is {size} bytes; tokio boxes futures over {TOKIO_BOXES_ABOVE}");
}
