//! `agentic ask --stream`: the exec's events written as they come. On a terminal, the answer as
//! it arrives, a rewind erased ([`screen`]); with `--json`, one JSON line per event
//! ([`json_event`]); on a pipe or a file, nothing until the answer (text written there cannot be
//! taken back), which `ask` prints as without `--stream`.

pub(crate) mod json_event;
pub(crate) mod rows;
pub(crate) mod screen;

use std::io::Write as _;

use agentic_runtime::exec::{ExecEvent, ExecStream};
use agentic_runtime::{ExecError, Reply};
use futures_util::StreamExt as _;

use crate::stream::json_event::JsonEvent;
use crate::stream::screen::Screen;

/// Where a streamed exec's events go.
pub(crate) enum Output {
    /// Each event as a JSON line on stdout, flushed.
    Json,
    /// The terminal: the answer as it arrives.
    Screen(Screen),
    /// Nothing: only the answer, at the end.
    Answer,
}

/// Reads `stream` to its end, writing each event to `output`; what its last event carried.
pub(crate) async fn follow(mut stream: ExecStream<'_>, mut output: Output) -> Result<Reply, ExecError> {
    let mut done = None;
    while let Some(event) = stream.next().await {
        match &mut output {
            Output::Json => {
                if let Some(json) = JsonEvent::of(&event) {
                    let mut stdout = std::io::stdout().lock();
                    // A reader that went away is not the exec's failure: the exit code stays its.
                    let _ = writeln!(stdout, "{}", json.line());
                    let _ = stdout.flush();
                }
            }
            Output::Screen(screen) => screen.show(&event),
            Output::Answer => {}
        }
        if let ExecEvent::Done(result) = event {
            done = Some(result);
        }
    }
    done.expect("an exec stream ends with Done")
}
