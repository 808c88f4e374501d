//! The `#[agentic_function]` attribute of `agentic-runtime`. Use it through `agentic-runtime`
//! (`agentic_runtime::agentic_function`): the code it generates refers to that crate.
//!
//! The attribute is a pipeline: `attr` parses the arguments, `valid` judges them with the
//! policy rules `agentic-runtime` uses too (the `agentic-policy` crate), `expand` rewrites the function.
#![warn(unreachable_pub, missing_debug_implementations)]

mod attr;
mod expand;
mod valid;

/// The policy rules, shared with `agentic-runtime` through the `agentic-policy` crate.
use agentic_policy as rules;

use proc_macro::TokenStream;

/// The attribute comes from the `agentic-macros` crate, and the code it generates refers to
/// `agentic-runtime`: use it through `agentic-runtime` (as `agentic_runtime::agentic_function`,
/// whose docs hold its keys and examples, tested there).
#[proc_macro_attribute]
pub fn agentic_function(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::agentic_function(args.into(), item.into()).into()
}
