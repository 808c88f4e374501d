//! Running a compactor on an exec's conversation, and checking what it returns.

use crate::compact::{Compactor, Overflow};
use crate::message::Message;
use crate::retry::session::Run;

/// The conversation `compactor` makes of `messages`, which overflowed with `error`; or why there
/// is none (the compactor's words, or what is wrong with its answer).
pub(crate) async fn compact(
    run: &mut Run<'_>,
    compactor: &dyn Compactor,
    messages: Vec<Message>,
    error: &str,
) -> Result<Vec<Message>, String> {
    let compacted = checked(compactor.compact(Overflow::new(messages, error, run)).await?)?;
    // The calls from now on send the shorter conversation (their spans say so).
    run.compacted = true;
    Ok(compacted)
}

/// `compacted` if a turn can be made with it: not empty, and ending with a message the model
/// answers; else what is wrong with it.
pub(crate) fn checked(compacted: Vec<Message>) -> Result<Vec<Message>, String> {
    match compacted.last() {
        None => Err("it returned an empty conversation".to_owned()),
        Some(Message::Assistant(_)) => Err(
            "it returned a conversation that ends with a message of the model; it must end with the message the model answers"
                .to_owned(),
        ),
        Some(_) => Ok(compacted),
    }
}
