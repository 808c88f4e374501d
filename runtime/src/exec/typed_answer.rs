//! What can be a typed answer: the bound of `Runtime::exec_json` and its kin, with a compile error
//! that says what to derive.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

/// A type an exec can answer with ([`Runtime::exec_json`](crate::Runtime::exec_json),
/// [`ExecRequest::typed`](crate::exec::ExecRequest::typed)): one that serde deserializes
/// from JSON and schemars describes, so the model is asked for JSON of its schema and its answer
/// is parsed back into it. Every such type is one; derive both:
///
/// ```
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Invoice {
///     currency: String,
///     total: f64,
/// }
///
/// fn answers_with<T: agentic_runtime::exec::TypedAnswer>() {}
/// answers_with::<Invoice>();
/// ```
///
/// The derive of schemars 1.x works as it is (the version the runtime uses, re-exported as
/// [`agentic_runtime::schemars`](crate::schemars)); with a type that misses one, the compile
/// error names the type and this fix, on the `exec_json` call.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a typed answer: it must implement `serde::Deserialize` and `schemars::JsonSchema`",
    label = "the answer is parsed as `{Self}` here",
    note = "derive both on it: `#[derive(serde::Deserialize, schemars::JsonSchema)]` (schemars 1.x, which `agentic_runtime::schemars` re-exports)"
)]
pub trait TypedAnswer: DeserializeOwned + JsonSchema {}

impl<T: DeserializeOwned + JsonSchema> TypedAnswer for T {}
