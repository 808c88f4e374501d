//! The runtime's HTTP providers bring their own TLS and change nothing for the program's other
//! reqwest clients: one that brings no TLS of its own still starts (reqwest's `rustls` fallback),
//! and no process-wide crypto provider is installed by building or using a provider.

use agentic_runtime::provider::OpenAiProvider;
use agentic_runtime::{Runtime, Scripted, ScriptedProvider};

#[test]
fn another_reqwest_client_without_tls_of_its_own_starts_beside_the_providers() {
    let _provider = OpenAiProvider::new("https://api.openai.com/v1", Some("sk-not-sent".to_owned()));
    let _runtime = Runtime::new(ScriptedProvider::new([Scripted::ok("hi")]));
    // The workspace's reqwest has no TLS feature but the runtime's: before, `Client::new()`
    // panicked here ("No rustls crypto provider is configured").
    let client = reqwest::Client::builder().build();
    assert!(client.is_ok(), "{client:?}");
    assert!(rustls::crypto::CryptoProvider::get_default().is_none(), "no process-wide provider was installed");
}
