//! `validate = path`: a free function, a module path, a generic function, any `Display` error.
#![deny(warnings)]
#![allow(dead_code)]

use std::fmt;

use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

fn non_empty(reply: &Reply) -> Result<(), String> {
    if reply.text().is_empty() { Err("the reply is empty".to_owned()) } else { Ok(()) }
}

mod checks {
    use agentic_runtime::Reply;

    #[derive(Debug)]
    pub struct TooLong(pub usize);

    impl std::fmt::Display for TooLong {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{} characters is too long", self.0)
        }
    }

    pub fn short(reply: &Reply) -> Result<(), TooLong> {
        match reply.text().len() {
            n if n > 100 => Err(TooLong(n)),
            _ => Ok(()),
        }
    }

    pub fn at_most<const N: usize>(reply: &Reply) -> Result<(), &'static str> {
        if reply.text().len() > N { Err("too long") } else { Ok(()) }
    }
}

fn parses<T: std::str::FromStr>(reply: &Reply) -> Result<(), T::Err>
where
    T::Err: fmt::Display,
{
    reply.text().parse::<T>().map(drop)
}

fn either<A: std::str::FromStr, B: std::str::FromStr>(reply: &Reply) -> Result<(), &'static str> {
    match (reply.text().parse::<A>(), reply.text().parse::<B>()) {
        (Err(_), Err(_)) => Err("neither"),
        _ => Ok(()),
    }
}

/// A comma inside the path's generic arguments is not the end of the argument.
#[agentic_function(validate = either::<u8, bool>, max_retries = 2)]
async fn two_generic_arguments(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(validate = non_empty)]
async fn free(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(validate = checks::short)]
async fn module_path(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(validate = checks::at_most::<80>, max_retries = 5)]
async fn const_generic(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

#[agentic_function(validate = parses::<u32>)]
async fn type_generic(runtime: &Runtime) -> Result<u32, ExecError> {
    let reply = runtime.exec("a number please").await?;
    Ok(reply.text().parse().unwrap_or_default())
}

#[agentic_function(validate = parses::<T>)]
async fn outer_generic<T: std::str::FromStr>(runtime: &Runtime) -> Result<Option<T>, ExecError>
where
    T::Err: fmt::Display,
{
    Ok(runtime.exec("hello").await?.text().parse().ok())
}

fn main() {}
