//! A global allocator that counts this thread's allocations, for the tests and benches that assert or
//! print how many allocations a call makes. Included by `#[path]` (each test binary needs its own
//! `#[global_allocator]`); it costs a thread-local increment per allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

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

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations (and reallocations) made on this thread so far.
pub fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// Allocations made on this thread by running `work` to completion on `tokio`.
#[allow(dead_code)] // not every includer blocks on a runtime
pub fn count<T>(tokio: &tokio::runtime::Runtime, work: impl Future<Output = T>) -> (usize, T) {
    let before = allocations();
    let out = tokio.block_on(work);
    (allocations() - before, out)
}
