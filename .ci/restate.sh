# Sourced by .ci/run: the Restate server for agentic-restate's tests and example.
#
# install_restate installs the server's npm package (`@restatedev/restate-server`, a static binary per
# platform) into a cache directory named after its version, reused when present, and exports
# RESTATE_SERVER_BIN, the platform binary. Never the package's `bin/restate-server`: that is a Node
# wrapper which forwards no SIGKILL, so killing it leaves the server running. Nothing is started:
# each test starts and stops its own server on 127.0.0.1 and free ports. A RESTATE_SERVER_BIN
# already set is used as it is. The server's license (BSL 1.1) allows this use: CI and development.

RESTATE_VERSION=1.7.12

install_restate() {
    if [[ -n "${RESTATE_SERVER_BIN:-}" ]]; then
        echo "using RESTATE_SERVER_BIN=$RESTATE_SERVER_BIN ($("$RESTATE_SERVER_BIN" --version))"
        return 0
    fi
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        echo "installing the Restate server needs node and npm; or set RESTATE_SERVER_BIN to a restate-server $RESTATE_VERSION binary" >&2
        return 1
    fi
    local dir="${AGENTIC_RESTATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentic/restate-server-$RESTATE_VERSION}"
    # The platform package's binary, found as Node resolves it (the package names Node's platform
    # and architecture: linux-x64, darwin-arm64, ...).
    local resolve="require.resolve('@restatedev/restate-server-' + process.platform + '-' + process.arch + '/bin/restate-server', {paths: [process.argv[1]]})"
    if ! node -e "$resolve" "$dir/node_modules" >/dev/null 2>&1; then
        echo "installing @restatedev/restate-server@$RESTATE_VERSION from the npm registry into $dir"
        # --ignore-scripts: the package's one dependency is a postinstall phone-home (@scarf/scarf).
        npm install --prefix "$dir" --no-save --no-audit --no-fund --ignore-scripts \
            "@restatedev/restate-server@$RESTATE_VERSION"
    fi
    RESTATE_SERVER_BIN="$(node -p "$resolve" "$dir/node_modules")"
    export RESTATE_SERVER_BIN
    echo "RESTATE_SERVER_BIN=$RESTATE_SERVER_BIN ($("$RESTATE_SERVER_BIN" --version))"
}
