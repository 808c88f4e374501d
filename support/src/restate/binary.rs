//! Which `restate-server` binary the tests run: `RESTATE_SERVER_BIN`, else the first on `PATH`,
//! never the npm package's Node wrapper (it forwards no SIGKILL: killing it would leave the server
//! running).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::error::HarnessError;

/// The environment variable naming the server's binary.
pub const SERVER_BIN_ENV: &str = "RESTATE_SERVER_BIN";

const NAME: &str = "restate-server";

const HOW_TO_INSTALL: &str = "install it with `source .ci/restate.sh && install_restate` (which exports \
     RESTATE_SERVER_BIN), or `npm install @restatedev/restate-server@1.7.12` and set RESTATE_SERVER_BIN to \
     node_modules/@restatedev/restate-server-<os>-<arch>/bin/restate-server";

/// The server's binary: `RESTATE_SERVER_BIN` if set (it must be a file), else `restate-server` on
/// `PATH`, the npm package's Node wrapper resolved to the platform binary beside it.
pub fn server_binary() -> Result<PathBuf, HarnessError> {
    find_server_binary(std::env::var_os(SERVER_BIN_ENV).as_deref(), std::env::var_os("PATH").as_deref())
}

/// [`server_binary`] with `RESTATE_SERVER_BIN`'s and `PATH`'s values given (a test's own, without
/// changing the process's environment).
pub fn find_server_binary(server_bin: Option<&OsStr>, path: Option<&OsStr>) -> Result<PathBuf, HarnessError> {
    if let Some(server_bin) = server_bin.filter(|server_bin| !server_bin.is_empty()) {
        let server_bin = PathBuf::from(server_bin);
        if !server_bin.is_file() {
            return Err(HarnessError::NoServer(format!(
                "{SERVER_BIN_ENV}={} is not a file: point it at the restate-server binary; {HOW_TO_INSTALL}",
                server_bin.display()
            )));
        }
        return unwrap_node_wrapper(server_bin);
    }
    match path.and_then(|path| on_path(path, NAME)) {
        Some(found) => unwrap_node_wrapper(found),
        None => Err(HarnessError::NoServer(format!(
            "the Restate server is needed and none was found: set {SERVER_BIN_ENV} to its binary, or put \
             `{NAME}` on PATH; {HOW_TO_INSTALL}"
        ))),
    }
}

/// The first executable file called `name` in `PATH`'s directories.
fn on_path(path: &OsStr, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path).map(|dir| dir.join(name)).find(|candidate| candidate.is_file())
}

/// `path` itself, or, when it is the npm package's Node script, the platform binary it would run.
fn unwrap_node_wrapper(path: PathBuf) -> Result<PathBuf, HarnessError> {
    if !is_node_script(&path)? {
        return Ok(path);
    }
    let target = std::fs::canonicalize(&path)
        .map_err(|source| HarnessError::Io { doing: format!("resolving {}", path.display()), source })?;
    let package = platform_package();
    // Where Node's `require.resolve` would look from the script: each ancestor's `node_modules`, and
    // the scope directory the wrapper's own package sits in.
    let found = target.ancestors().skip(1).find_map(|dir| {
        let candidates = [
            dir.join("node_modules/@restatedev").join(&package).join("bin").join(NAME),
            dir.join("@restatedev").join(&package).join("bin").join(NAME),
        ];
        candidates.into_iter().find(|candidate| candidate.is_file() && !is_node_script(candidate).unwrap_or(true))
    });
    found.ok_or_else(|| {
        HarnessError::NoServer(format!(
            "{} is the npm package's Node wrapper (it forwards no SIGKILL, so killing it would leave the server \
             running) and no @restatedev/{package}/bin/{NAME} was found beside {}: set {SERVER_BIN_ENV} to the \
             platform binary; {HOW_TO_INSTALL}",
            path.display(),
            target.display()
        ))
    })
}

/// Whether the file starts with `#!` and names node on that line.
fn is_node_script(path: &Path) -> Result<bool, HarnessError> {
    use std::io::Read as _;
    let mut head = [0_u8; 128];
    let read = std::fs::File::open(path)
        .and_then(|mut file| file.read(&mut head))
        .map_err(|source| HarnessError::Io { doing: format!("reading {}", path.display()), source })?;
    let head = &head[..read];
    let first_line = head.split(|&byte| byte == b'\n').next().unwrap_or_default();
    Ok(first_line.starts_with(b"#!") && first_line.windows(4).any(|window| window == b"node"))
}

/// The npm package of this platform's binary: `restate-server-<os>-<arch>` in Node's names.
fn platform_package() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("{NAME}-{os}-{arch}")
}
