//! A global allocator that keeps the process's live heap bytes and their peak, for the tests that
//! assert how much memory a piece of work holds at most (`counting_alloc` counts allocations of one
//! thread; this counts bytes of all threads, as memory is shared).
//!
//! Each test that measures installs it itself, in a test binary of its own: it costs two atomic
//! operations per allocation.
//!
//! ```
//! use agentic_test_support::peak_alloc::{PeakBytes, live, peak, reset_peak};
//!
//! #[global_allocator]
//! static ALLOCATOR: PeakBytes = PeakBytes;
//!
//! fn main() {
//!     reset_peak();
//!     let before = live();
//!     let buffer = vec![0u8; 1 << 20];
//!     drop(buffer);
//!     assert!(peak() - before >= 1 << 20);
//! }
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The allocator: forwards to the system allocator and keeps the live bytes and their peak.
/// Install it with `#[global_allocator] static ALLOCATOR: PeakBytes = PeakBytes;`.
pub struct PeakBytes;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    LIVE.fetch_sub(bytes, Ordering::Relaxed);
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for PeakBytes {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            // Both blocks may be live during the move: count the new one before the old is gone.
            grew(new_size);
            shrank(layout.size());
        }
        moved
    }
}

/// The heap bytes live now (zero unless [`PeakBytes`] is the global allocator).
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// The most heap bytes live at once since the last [`reset_peak`].
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// Starts a new peak from the bytes live now.
pub fn reset_peak() {
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
}
