//! A compactor's model call: through both layers of the exec that is compacting, within its budget.

use std::future::Future;
use std::pin::Pin;

use crate::compact::AskModel;
use crate::message::Message;
use crate::policy::backoff::Schedule;
use crate::provider::ResponseSchema;
use crate::retry::session::{Run, run_layer};
use crate::retry::{Failed, Next};
use crate::tool::ToolSpec;

impl AskModel for Run<'_> {
    fn ask(&mut self, messages: Vec<Message>) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send + '_>> {
        Box::pin(async move {
            let plain = Plain::new(self);
            ask_through_layers(&mut *plain.run, &messages).await
        })
    }
}

/// The run without the exec's tools and schema while a compactor asks its question (the question
/// is the compactor's, not the exec's), given back when dropped: also when a compactor gives up
/// waiting for the answer and goes on.
struct Plain<'r, 'a> {
    run: &'r mut Run<'a>,
    tools: std::borrow::Cow<'a, [ToolSpec]>,
    schema: Option<&'a ResponseSchema>,
}

impl<'r, 'a> Plain<'r, 'a> {
    fn new(run: &'r mut Run<'a>) -> Self {
        let (tools, schema) = (std::mem::take(&mut run.tools), run.schema.take());
        Self { run, tools, schema }
    }
}

impl Drop for Plain<'_, '_> {
    fn drop(&mut self) {
        self.run.tools = std::mem::take(&mut self.tools);
        self.run.schema = self.schema;
    }
}

/// Layer 2's loop for one question: attempts until one answers or the layer gives up, each attempt
/// a run of layer 1. The calls, decisions, tokens and deadlines are the exec's.
async fn ask_through_layers(run: &mut Run<'_>, messages: &[Message]) -> Result<String, String> {
    if let Some(refusal) = run.state.budget.extra_call_refusal() {
        return Err(format!("no call may be made for it: {refusal}"));
    }
    let mut schedule = Schedule::exec(run.state.policy);
    let mut index = 0u32;
    loop {
        let message = run_layer(run, messages).await.map_err(|error| error.to_string())?;
        // An answer paid for retries in layer 1, as an exec's do.
        if !message.is_error() {
            if message.has_tool_calls() {
                return Err("the model asked for tools instead of answering".to_owned());
            }
            return Ok(message.into_text());
        }
        let (failed, _) = Failed::of_message(message, run.state.judged.take());
        let error = failed.error.clone();
        // Boxed: the failure path's futures (the decision, the sleep, the retry quota) would
        // otherwise make the compactor's future larger.
        if let Next::Stop(..) = Box::pin(run.state.after_failed_attempt(&mut schedule, index, failed)).await {
            let why = run.state.decisions.last().map(|decision| decision.reason.to_string());
            return Err(match why {
                Some(why) => format!("{error} ({why})"),
                None => error,
            });
        }
        index += 1;
    }
}
