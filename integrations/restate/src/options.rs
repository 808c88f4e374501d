//! The Restate timeouts a durable agent's service needs: a step sends Restate nothing while it
//! runs, and a step longer than the inactivity and abort timeouts together is aborted and run
//! again, paid again (docs/design.md §24).

use std::time::Duration;

use agentic_runtime::RetryPolicy;
use agentic_runtime::tool::Toolbox;
use restate_sdk::endpoint::ServiceOptions;

/// What a step may take beyond its own bound before Restate calls it inactive: the journal's round
/// trip and the scheduler's delays, not the step's work.
const SLACK: Duration = Duration::from_secs(30);

/// How long Restate waits, once it found a step inactive, before it aborts the attempt.
const ABORT_AFTER: Duration = Duration::from_secs(60);

/// The longest one step of an exec under `policy` with `tools` may take: a model step is bounded
/// by the turn's deadline (`turn_timeout_ms`) and the exec's budget (`budget_ms`), a tool step by
/// its tool's timeout.
pub fn longest_step(policy: &RetryPolicy, tools: &Toolbox) -> Duration {
    let model = policy.budget().map_or(policy.turn_timeout(), |budget| budget.min(policy.turn_timeout()));
    let tool = tools.names().filter_map(|name| tools.timeout_of(&name)).max().unwrap_or(tools.timeout());
    model.max(tool)
}

/// Service options whose inactivity timeout outlasts [`longest_step`] (by 30 s) and whose abort
/// timeout is a minute: Restate then never aborts a step that is still working within its bounds,
/// which would call the model again.
///
/// ```
/// use agentic_runtime::RetryPolicy;
/// use agentic_runtime::tool::Toolbox;
///
/// let options = agentic_restate::service_options(&RetryPolicy::new(), &Toolbox::new());
/// # let _ = options;
/// ```
pub fn service_options(policy: &RetryPolicy, tools: &Toolbox) -> ServiceOptions {
    ServiceOptions::new().inactivity_timeout(longest_step(policy, tools) + SLACK).abort_timeout(ABORT_AFTER)
}
