use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

// `session_base_delay_ms` does not parse, so `max_delay_ms` is not compared with a default the user
// did not write; the rules that hold whatever it is (`max_delay_ms` below `exec_base_delay_ms`,
// `retry_after_cap_ms = 0`) are still reported, and `max_calls = 5` is fine whatever it is.
#[agentic_function(session_base_delay_ms = "50", max_delay_ms = 100, max_calls = 5, retry_after_cap_ms = 0)]
async fn one_cause(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

fn main() {}
