//! Streaming an exec to its caller: the events ([`ExecEvent`]), the stream that yields them
//! ([`ExecStream`]), what happens once text has reached the caller ([`StreamMode`]), and the tap
//! the exec writes them to (crate-private). The commit point and the rewind rule are
//! docs/design.md §22.

mod event;
mod exec_stream;
pub(crate) mod tap;

pub use event::{ExecEvent, StreamMode};
pub use exec_stream::ExecStream;
