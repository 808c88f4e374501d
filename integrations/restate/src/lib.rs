//! Durable runs on [Restate](https://restate.dev): an agent function as a Restate handler, each
//! model call and each tool call of its execs a journaled step (`ctx.run`), so that when the
//! service's process dies and Restate invokes the handler again, every step that completed
//! returns its record without a call, and the run goes on from the first step that did not
//! (docs/design.md §24).
//!
//! ```no_run
//! use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};
//! use restate_sdk::prelude::*;
//!
//! /// Answers research questions.
//! #[agentic_function(max_retries = 3)]
//! async fn research(runtime: &Runtime, question: &str) -> Result<Reply, ExecError> {
//!     runtime.exec(question).await
//! }
//!
//! struct Researcher {
//!     runtime: Runtime,
//! }
//!
//! #[restate_sdk::service]
//! impl Researcher {
//!     #[handler]
//!     async fn ask(&self, ctx: Context<'_>, question: String) -> Result<Json<Reply>, HandlerError> {
//!         let reply = agentic_restate::durable(&ctx).run(research(&self.runtime, &question)).await;
//!         reply.map(Json).map_err(agentic_restate::terminal)
//!     }
//! }
//! ```
//!
//! - **The retry layers stay the runtime's.** A step is one attempt of a model turn through layer
//!   1 (its in-session retries inside it) or one tool call; Restate never retries a step
//!   (`max_attempts(1)`), and an exec's error is terminal ([`terminal()`]). What Restate retries is
//!   the invocation whose process died.
//! - **Bounds hold across a restart.** A replayed model step counts its calls against
//!   `max_calls`, its time against the deadlines and its tokens against the spend limits.
//! - **Tools.** A tool call that was running when the process died runs again only if its tool is
//!   [`Delivery::AtLeastOnce`](agentic_runtime::tool::Delivery); otherwise the model is told its
//!   outcome is unknown. Its idempotency key is the same after the restart.
//! - **Changed code** that replays a step its journal recorded differently ends the exec with
//!   `ExecErrorKind::ReplayMismatch`.
//! - **Timeouts.** Restate aborts a step that sends nothing for its inactivity and abort timeouts:
//!   bind the service with [`service_options`], which outlast the policy's longest step.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod bridge;
mod context;
mod driver;
mod options;
mod terminal;

pub use context::DurableContext;
pub use driver::{Durable, StepReport};
pub use options::{longest_step, service_options};
pub use terminal::terminal;

/// A durable run in the handler whose context is `ctx` (a service's, a virtual object's or a
/// workflow's: [`DurableContext`]), named by its invocation id: then [`Durable::run`] the agent's
/// future in it.
pub fn durable<C: DurableContext>(ctx: &C) -> Durable<'_, C> {
    Durable::new(ctx, ctx.invocation())
}
