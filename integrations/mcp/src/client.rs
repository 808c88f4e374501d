//! The client side of the MCP session: who we say we are, and no capabilities (no sampling, no
//! roots, no elicitation: a server that asks for them is told the method is not found).

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};

/// The runtime's MCP client: `agentic-runtime` and its version in `initialize`, asking for the
/// newest protocol version that has the `initialize` handshake and sessions (2025-11-25), the one
/// deployed servers speak; a server that knows only an older one answers with it.
pub(crate) struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agentic-runtime", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}
