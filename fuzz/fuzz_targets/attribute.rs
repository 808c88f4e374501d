#![no_main]

// The macros' sources, as `macros/src/lib.rs` includes them (a proc-macro crate cannot be linked).
#[allow(dead_code)]
#[path = "../../macros/src/attr.rs"]
mod attr;
#[allow(dead_code)]
#[path = "../../macros/src/expand.rs"]
mod expand;
#[allow(dead_code)]
#[path = "../../runtime/src/policy/rules.rs"]
mod rules;
#[allow(dead_code)]
#[path = "../../macros/src/valid.rs"]
mod valid;

#[path = "../checks/attribute.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
