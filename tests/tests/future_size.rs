//! The future of `exec` stays small: a regression guard on what every exec carries.
//!
//! Tokio's `block_on` and `spawn` box a future over 2 KiB in debug builds (16 KiB in release): one
//! allocation per exec, debug builds only, which `alloc.rs` does not count (it measures the exec's
//! own allocations). With the spans of docs/design.md §14 the debug future is a little over that
//! (2160 bytes); the guard is 2.5 KiB, so that what grows the state of every exec is noticed and
//! boxed onto the failure path, as layer 1's and layer 2's retry steps are.

use agentic_runtime::{Runtime, ScriptedProvider};

/// The budget for exec's future in a debug build.
const GUARD: usize = 2560;

#[test]
fn the_exec_future_stays_small() {
    let runtime = Runtime::new(ScriptedProvider::new([]));
    let size = std::mem::size_of_val(&runtime.exec("the question"));
    assert!(size <= GUARD, "exec's future is {size} bytes, over its {GUARD}-byte guard: what grew?");
}

/// What an exec and a resilient call return is moved on every success: their errors sit behind
/// one box, so that the result is no larger than the value (`Reply` for an exec, a `u64` and a
/// pointer for a resilient call).
#[test]
fn results_are_no_larger_than_their_values() {
    use agentic_runtime::resilient::Failure;
    use agentic_runtime::{ExecError, Reply};
    assert_eq!(size_of::<Result<Reply, ExecError>>(), size_of::<Reply>());
    assert_eq!(size_of::<ExecError>(), size_of::<usize>());
    assert_eq!(size_of::<Result<u64, Failure<std::io::Error>>>(), 2 * size_of::<u64>());
}
