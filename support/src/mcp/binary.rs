//! The test server's binary, `agentic-mcp-test-server`, found next to the running test or built.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The binary's name.
pub const BINARY: &str = "agentic-mcp-test-server";

/// The path of `agentic-mcp-test-server`, in the target directory of the running test
/// (`current_exe()`'s `../agentic-mcp-test-server`), built there once per test process by `$CARGO
/// build -p agentic-test-support --features mcp --bin agentic-mcp-test-server` (as trybuild builds
/// its crates), so a crate's tests work alone and never run a binary older than the server's
/// source (the build is a no-op when it is fresh). Run outside cargo (no `$CARGO`), a binary that
/// is there is used as it is.
///
/// # Panics
///
/// If the binary is absent and cannot be built (the build's output is in the message).
pub fn server_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(find_or_build).clone()
}

fn find_or_build() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    // target/debug/deps/test-hash → target/debug; a bench runs from the same deps directory.
    let profile_dir = exe.parent().and_then(Path::parent).expect("the test runs from target/<profile>/deps");
    let binary = profile_dir.join(BINARY);
    let cargo = std::env::var_os("CARGO");
    if cargo.is_none() && binary.exists() {
        return binary;
    }
    let cargo = cargo.unwrap_or_else(|| "cargo".into());
    let target_dir = profile_dir.parent().expect("target/<profile> has a parent");
    let release = profile_dir.file_name().is_some_and(|name| name == "release");
    let mut build = Command::new(cargo);
    build
        .args(["build", "-p", "agentic-test-support", "--features", "mcp", "--bin", BINARY])
        .arg("--target-dir")
        .arg(target_dir);
    if release {
        build.arg("--release");
    }
    let output = build.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "building {BINARY} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(binary.exists(), "cargo built {BINARY} but it is not at {}", binary.display());
    binary
}
