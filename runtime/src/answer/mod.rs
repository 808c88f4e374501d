//! What an exec gives back: its reply, a typed reply, or the error that ended it.

pub(crate) mod exec_error;
pub(crate) mod reply;
pub(crate) mod typed_reply;

pub use exec_error::{ExecError, ExecErrorKind};
pub use reply::Reply;
pub use typed_reply::TypedReply;
