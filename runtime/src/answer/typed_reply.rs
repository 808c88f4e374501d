//! The answer of a typed exec: the value, and the same facts as a [`Reply`] (its decisions, usage,
//! calls, attempts, time and target).

use std::ops::Deref;

use crate::answer::reply::Reply;

/// What [`ExecRequest::typed`](crate::exec::ExecRequest::typed) returns: the answer parsed as
/// a `T`, and the [`Reply`] it came in, whose facts it derefs to (`typed.decisions()`,
/// `typed.total_usage()`, `typed.calls()`, ...).
///
/// # Examples
///
/// ```
/// use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
///
/// #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
/// struct Total {
///     total: f64,
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let provider = ScriptedProvider::new([Scripted::error("overloaded"), Scripted::ok(r#"{"total": 12.5}"#)]);
/// let typed = Runtime::new(provider).request("Add it up: ...").typed::<Total>().await.unwrap();
/// assert_eq!(typed.value().total, 12.5);
/// assert_eq!((typed.calls(), typed.decisions().len()), (2, 1)); // the retry is there
/// let (total, reply) = typed.into_parts();
/// assert_eq!((total.total, reply.text()), (12.5, r#"{"total": 12.5}"#));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TypedReply<T> {
    value: T,
    reply: Reply,
}

impl<T> TypedReply<T> {
    pub(crate) fn new(value: T, reply: Reply) -> Self {
        Self { value, reply }
    }

    /// The answer as a `T`.
    pub fn value(&self) -> &T {
        &self.value
    }

    /// The answer as a `T`, without the facts.
    pub fn into_value(self) -> T {
        self.value
    }

    /// The reply it came in: its text is the JSON that parsed.
    pub fn reply(&self) -> &Reply {
        &self.reply
    }

    /// The value and the reply.
    pub fn into_parts(self) -> (T, Reply) {
        (self.value, self.reply)
    }
}

impl<T> Deref for TypedReply<T> {
    type Target = Reply;

    fn deref(&self) -> &Reply {
        &self.reply
    }
}
