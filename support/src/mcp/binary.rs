//! The test server's binary, `agentic-mcp-test-server`, found next to the running test or built.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The binary's name.
pub const BINARY: &str = "agentic-mcp-test-server";

/// The path of `agentic-mcp-test-server`, in the target directory of the running test
/// (`current_exe()`'s `../agentic-mcp-test-server`). A binary there that is newer than the server's
/// sources (this crate's `src/`, its manifest and the workspace's lock) is used as it is: `cargo
/// test --workspace` builds it with the workspace's features. Else it is built there, once per test
/// process, by `$CARGO build -p agentic-test-support --features mcp --bin agentic-mcp-test-server`
/// (as trybuild builds its crates), so a crate's tests work alone and never run a binary older
/// than the server's source. Run outside cargo (no `$CARGO`), a binary that is there is used.
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
    if binary.exists() && (cargo.is_none() || newer_than_its_sources(&binary)) {
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

/// True when `binary` was built after the last change to what it is built from: this crate's
/// sources and manifest, and the workspace's `Cargo.lock` (a changed dependency). A build with
/// other features (`cargo test --workspace`'s) is as good: the server's behaviour is its source.
fn newer_than_its_sources(binary: &Path) -> bool {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|meta| meta.modified()).ok();
    let Some(built) = modified(binary) else {
        return false;
    };
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut newest = [manifest_dir.join("Cargo.toml"), manifest_dir.join("../Cargo.lock")]
        .iter()
        .filter_map(|path| modified(path))
        .max();
    let mut pending = vec![manifest_dir.join("src")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if let Some(changed) = modified(&path) {
                newest = newest.max(Some(changed));
            }
        }
    }
    newest.is_some_and(|newest| newest <= built)
}
