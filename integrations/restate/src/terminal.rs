//! An exec's error as a Restate handler returns it.

use agentic_runtime::ExecError;
use restate_sdk::errors::{HandlerError, TerminalError};

/// `error` as a terminal failure of the invocation: Restate does not retry it. The runtime's layers
/// already retried what was worth it, within the call cap and the deadline, and judged the rest
/// permanent; an engine retry would start the exec's turn over past those bounds (the double-retry
/// rule, docs/design.md §24). The message is the error's (its kind and each attempt); the code 500.
///
/// A process that dies is not an error: Restate retries the invocation, and the run goes on from
/// its journal.
pub fn terminal(error: ExecError) -> HandlerError {
    TerminalError::new(format!("{} ({})", error, error.kind())).into()
}
