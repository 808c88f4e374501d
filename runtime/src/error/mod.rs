//! Errors: the typed failure of one model call, the error of one `exec`, and an invalid policy.

mod exec_error;
pub(crate) mod model_error;
mod policy_error;

pub use exec_error::{ExecError, ExecErrorKind};
pub use model_error::{ModelError, TransportKind};
pub use policy_error::PolicyError;
