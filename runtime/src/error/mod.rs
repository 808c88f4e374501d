//! Errors of one model call (typed, with its transport kind) and of an invalid policy. The error of a
//! whole `exec` is [`ExecError`](crate::ExecError), beside the decisions it carries.

pub(crate) mod model_error;
mod policy_error;
pub(crate) mod unreadable;

pub use model_error::{ModelError, TransportKind};
pub use policy_error::PolicyError;
