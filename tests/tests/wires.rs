//! The runtime's wire registry and the chaos server's name the same wires in the same order: a wire
//! registered on one side only would leave the fault tests, which iterate
//! `agentic_test_support::wires::all`, without a server (or a provider) for it.

use agentic_chaos::WireFormat;
use agentic_runtime::provider::WireKind;
use agentic_test_support::wires;

#[test]
fn the_runtime_and_the_chaos_server_register_the_same_wires_in_the_same_order() {
    let runtime: Vec<&str> = WireKind::ALL.iter().map(|kind| kind.name()).collect();
    let chaos: Vec<&str> = WireFormat::ALL.iter().map(|format| format.name()).collect();
    assert_eq!(
        runtime, chaos,
        "the runtime's `WireKind::ALL` (left) and the chaos server's `WireFormat::ALL` (right) must list the \
         same wires in the same order: register a new wire on both sides"
    );
    let paired: Vec<&str> = wires::all().into_iter().map(|wire| wire.format.name()).collect();
    assert_eq!(paired, runtime, "each wire is paired with the chaos format of its own name");
    // The first four wires' order (a fuzz input picks `ALL[byte % len]`, so a wire keeps
    // its place): whichever of them are registered come in this order, first, new wires after.
    const DECIDED: [&str; 4] = ["openai", "anthropic", "gemini", "responses"];
    let known: Vec<&str> = DECIDED.into_iter().filter(|name| runtime.contains(name)).collect();
    assert!(runtime.starts_with(&known), "the first four wires come first, in the order {DECIDED:?}: {runtime:?}");
    assert!(runtime.starts_with(&["openai", "anthropic"]), "the first wires keep their places: {runtime:?}");
}
