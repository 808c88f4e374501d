//! A global allocator that counts this thread's allocations, for the tests and benches that assert or
//! print how many allocations a call makes; it costs a thread-local increment per allocation.
//!
//! A library cannot choose a binary's allocator for it, and linking this crate must not change the
//! allocator of every test that only wants a temp file: each test or bench that counts installs it
//! itself, and the counts stay zero otherwise.
//!
//! ```
//! use agentic_test_support::counting_alloc::{Counting, count};
//!
//! #[global_allocator]
//! static ALLOCATOR: Counting = Counting;
//!
//! fn main() {
//!     let tokio = tokio::runtime::Builder::new_current_thread().build().unwrap();
//!     let (made, boxed) = count(&tokio, async { Box::new(1u8) });
//!     assert!(made > 0, "the counter counts");
//!     assert_eq!(*boxed, 1);
//! }
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The counting allocator: forwards to the system allocator and counts, per thread, each allocation
/// and reallocation. Install it with `#[global_allocator] static ALLOCATOR: Counting = Counting;`.
pub struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations (and reallocations) made on this thread so far, if [`Counting`] is the global
/// allocator (zero otherwise).
pub fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// Allocations made on this thread by running `work` to completion on `tokio`: the work's own.
///
/// The future is pinned here and `block_on` gets a pointer to it: given a large future itself
/// (over 2 KiB in debug builds), tokio would box it first, an allocation of the harness, not of the
/// work.
pub fn count<T>(tokio: &tokio::runtime::Runtime, work: impl Future<Output = T>) -> (usize, T) {
    let mut work = std::pin::pin!(work);
    let before = allocations();
    let out = tokio.block_on(work.as_mut());
    (allocations() - before, out)
}
