use agentic_runtime::{ExecError, Runtime, agentic_function};

// Neither `serde::Deserialize` nor `schemars::JsonSchema`.
struct Invoice {
    total: f64,
}

/// Read the invoice.
#[agentic_function]
async fn read(runtime: &Runtime, text: &str) -> Result<f64, ExecError> {
    let invoice: Invoice = runtime.exec_json(text).await?;
    Ok(invoice.total)
}

fn main() {}
