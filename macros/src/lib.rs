//! The `#[agentic_function]` attribute. Use it through `agentic-runtime`.

use proc_macro::TokenStream;

/// Placeholder until the attribute lands (issue 3): returns the item unchanged.
#[proc_macro_attribute]
pub fn agentic_function(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
