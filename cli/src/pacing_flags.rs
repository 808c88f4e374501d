//! `agentic ask`'s pacing flags: the limits a user knows before any response states them, or no
//! pacing at all (`RuntimeBuilder::with_pacing`).

use agentic_runtime::policy::PolicyError;
use agentic_runtime::storm::pace::Pacing;

/// How `agentic ask` paces its calls under the server's rate limits.
#[derive(Debug, clap::Args)]
pub(crate) struct PacingFlags {
    /// The server's limit of requests a minute, paced by from the first call (the server's
    /// rate-limit headers replace it once they come) [default: learnt from the headers].
    #[arg(long, value_name = "N", conflicts_with = "no_pacing")]
    rpm: Option<u64>,
    /// The server's limit of tokens (input and output) a minute, as --rpm.
    #[arg(long, value_name = "N", conflicts_with = "no_pacing")]
    tpm: Option<u64>,
    /// Send every call when the layers send it, whatever the rate-limit headers say (a 429 is then
    /// handled by its Retry-After).
    #[arg(long)]
    no_pacing: bool,
}

impl PacingFlags {
    /// The pacing these flags ask for; a zero limit is an error that names its flag.
    pub(crate) fn pacing(&self) -> Result<Pacing, PolicyError> {
        if self.no_pacing {
            return Ok(Pacing::off());
        }
        let mut pacing = Pacing::from_headers();
        if let Some(rpm) = self.rpm {
            pacing = pacing.with_requests_per_minute(rpm)?;
        }
        if let Some(tpm) = self.tpm {
            pacing = pacing.with_tokens_per_minute(tpm)?;
        }
        Ok(pacing)
    }
}
