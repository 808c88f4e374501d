//! What a step records, and the fingerprint that tells a replay it is the same step.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::log::{Step, StepLogError};
use crate::error::ModelError;
use crate::message::usage::{Spent, UsageTotals};
use crate::message::{AssistantMessage, Message};

/// A step's record, tagged with its kind.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Record {
    /// A model call began: if no record of it follows, its process died with it.
    ModelStarted(Box<ModelStarted>),
    /// One attempt of a model turn through layer 1.
    Model(Box<ModelRecord>),
    /// An at-most-once tool call began: if no result follows, its outcome is unknown.
    ToolStarted(Box<ToolStarted>),
    /// A tool call's result.
    Tool(Box<ToolRecord>),
    /// A compaction of the conversation after a context overflow.
    Compaction(Box<CompactionRecord>),
}

impl Record {
    /// What the step was, in words, for a mismatch's message.
    pub(crate) fn about(&self) -> &str {
        match self {
            Record::ModelStarted(record) => &record.about,
            Record::Model(record) => &record.about,
            Record::ToolStarted(record) => &record.about,
            Record::Tool(record) => &record.about,
            Record::Compaction(record) => &record.about,
        }
    }

    /// The fingerprint of what the step was asked.
    pub(crate) fn fingerprint(&self) -> &str {
        match self {
            Record::ModelStarted(record) => &record.fingerprint,
            Record::Model(record) => &record.fingerprint,
            Record::ToolStarted(record) => &record.fingerprint,
            Record::Tool(record) => &record.fingerprint,
            Record::Compaction(record) => &record.fingerprint,
        }
    }
}

/// A model call began (its step's start marker): the exec's calls before it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ModelStarted {
    pub(crate) about: String,
    pub(crate) fingerprint: String,
    pub(crate) calls: u32,
}

/// The record of a step that may call the model: what it came to, and the exec's state after it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Settled<O> {
    pub(crate) about: String,
    pub(crate) fingerprint: String,
    pub(crate) outcome: O,
    #[serde(flatten)]
    pub(crate) after: After,
}

/// A model step's record: the attempt's outcome.
pub(crate) type ModelRecord = Settled<Outcome>;

/// A compaction step's record: the shorter conversation, or why the compactor made none.
pub(crate) type CompactionRecord = Settled<Compacted>;

/// What a compactor came to.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Compacted {
    Messages(Vec<Message>),
    Refused(String),
}

impl Compacted {
    pub(crate) fn into_result(self) -> Result<Vec<Message>, String> {
        match self {
            Compacted::Messages(messages) => Ok(messages),
            Compacted::Refused(why) => Err(why),
        }
    }
}

/// The exec's state after a step that may call the model: what a replay restores.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct After {
    /// The exec's model calls after the step (`max_calls` counts them).
    pub(crate) calls: u32,
    /// How long the step took.
    pub(crate) took_ms: u64,
    /// The exec's tokens after the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<UsageTotals>,
    /// What the exec had spent against its limits after the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) spent: Option<Spent>,
    /// The target the attempt ended at, from 0, for a runtime with fallbacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) target: Option<u32>,
}

/// What an attempt came to: the final message (an answer, tool calls or a failure), or the
/// programming error that ended it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    Message(AssistantMessage),
    Raised(ModelError),
}

impl Outcome {
    pub(crate) fn into_result(self) -> Result<AssistantMessage, ModelError> {
        match self {
            Outcome::Message(message) => Ok(message),
            Outcome::Raised(error) => Err(error),
        }
    }
}

/// An at-most-once tool call began.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ToolStarted {
    pub(crate) about: String,
    pub(crate) fingerprint: String,
}

/// A tool call's result, as the model gets it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ToolRecord {
    pub(crate) about: String,
    pub(crate) fingerprint: String,
    pub(crate) content: String,
    pub(crate) is_error: bool,
    /// How long the call took.
    pub(crate) took_ms: u64,
}

/// The fingerprint of `parts`: FNV-1a over their JSON, as 16 hex digits, hashed as it is written
/// (a conversation is not copied into a JSON tree first). Stable across processes and Rust
/// versions, as a journal's must be; a check that the same code asks the same, not a guard against
/// forgery (the journal is the engine's).
pub(crate) fn fingerprint(parts: &impl Serialize) -> String {
    let mut hasher = crate::util::fnv::Fnv1a::default();
    // Only a map with keys that are not strings fails to serialize, and no request has one.
    let _ = serde_json::to_writer(&mut hasher, parts);
    format!("{:016x}", hasher.0)
}

/// `record` as its [`Record`] of `kind` reads it: the tag beside the fields (written from a borrow,
/// so that the step's outcome goes on without a copy).
pub(crate) fn tagged<T: Serialize>(step: &Step, kind: &'static str, record: &T) -> Result<Value, StepLogError> {
    #[derive(Serialize)]
    struct Tagged<'a, T> {
        kind: &'static str,
        #[serde(flatten)]
        record: &'a T,
    }
    serde_json::to_value(Tagged { kind, record })
        .map_err(|error| StepLogError::new(format!("step {} cannot be written: {error}", step.index)))
}
