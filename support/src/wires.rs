//! The wires a test runs on: each of the runtime's [`WireKind::ALL`], paired with the chaos
//! server's [`WireFormat`] of the same name. A fault test iterates [`all`] and so runs on every wire
//! the registries hold, a wire added to both with no edit to the test.
//!
//! A wire registered on one side only is a broken build, not a skipped wire: [`all`] panics naming
//! it, and `tests/tests/wires.rs` checks that both registries list the same names in the same order.

use std::fmt;
use std::sync::Arc;

use agentic_chaos::{ChaosServer, WireFormat};
use agentic_runtime::provider::{Provider, WireKind};

/// One wire: the runtime's provider side and the chaos server's side of the same API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wire {
    /// The runtime's side: the provider that speaks it.
    pub kind: WireKind,
    /// The chaos server's side: the format it serves.
    pub format: WireFormat,
}

/// Every wire, in the runtime's order ([`WireKind::ALL`]).
///
/// # Panics
///
/// If a runtime wire has no chaos format of its name: the two registries must name the same wires.
pub fn all() -> Vec<Wire> {
    WireKind::ALL
        .iter()
        .map(|&kind| {
            let format = WireFormat::from_name(kind.name()).unwrap_or_else(|| {
                panic!(
                    "the runtime's wire `{}` has no chaos `WireFormat` of that name: register it in \
                     chaos/src/wire/mod.rs too",
                    kind.name()
                )
            });
            Wire { kind, format }
        })
        .collect()
}

/// The wire named `name`, for a case whose bytes are that wire's own (a body in its shape, an exact
/// error text of its API).
///
/// # Panics
///
/// If no wire of both registries has that name.
pub fn named(name: &str) -> Wire {
    all().into_iter().find(|wire| wire.name() == name).unwrap_or_else(|| panic!("no wire is named `{name}`"))
}

impl Wire {
    /// The wire's name (`openai`, `anthropic`, ...), as the journal and `agentic ask` spell it.
    pub fn name(self) -> &'static str {
        self.kind.name()
    }

    /// The base URL at which `server` speaks this wire.
    pub fn base_url(self, server: &ChaosServer) -> String {
        server.base_url(self.format)
    }

    /// A provider of this wire for `server`, without a key (the chaos server asks for none).
    pub fn provider(self, server: &ChaosServer) -> Arc<dyn Provider> {
        self.provider_at(&self.base_url(server), None, None)
    }

    /// A provider of this wire for the server at `base_url`, with `key` if any, asking for `model`
    /// (else the wire's default model).
    pub fn provider_at(self, base_url: &str, key: Option<&str>, model: Option<&str>) -> Arc<dyn Provider> {
        self.kind.provider(base_url, key.map(str::to_owned), model)
    }

    /// The path a provider of this wire posts a streamed call of its default model to, without the
    /// query a wire may add (Gemini's `alt=sse`), as the error texts name it: `/v1/chat/completions`,
    /// `/v1/messages`.
    pub fn request_path(self) -> String {
        self.format.request_path(self.kind.default_model(), true)
    }
}

impl fmt::Display for Wire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
