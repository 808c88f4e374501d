//! The runtime's tests on its HTTP providers (feature `providers`).
//!
//! One test binary for these files (each a module): one link and one build of what they share,
//! instead of one per file.

mod gemini_errors;
mod gemini_wire;
mod providers_anthropic;
mod providers_openai;
mod providers_rate_limits;
mod providers_support;
mod providers_tls;
mod reasoning_wires;
mod responses_wire;
mod secret_fragments;
mod stated_limit_wire;
mod tools_wire;
mod trust_boundary_answers;
mod trust_boundary_http;
mod unreadable_wire;
