# Sourced by .ci/run: a throwaway Redis for the `redis` feature's tests.
#
# start_redis installs redis-server from the distribution's packages if missing, starts it on
# 127.0.0.1 on a free port (no persistence, data in a temporary folder), waits until it answers
# PING, exports AGENTIC_REDIS_URL, and stops it when the calling shell exits. An
# AGENTIC_REDIS_URL already set is used as it is (nothing is started); with AGENTIC_SKIP_REDIS=1
# nothing is started and the tests that need Redis skip.

REDIS_PID=""
REDIS_DIR=""

stop_redis() {
    if [[ -n "$REDIS_PID" ]]; then
        kill "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
        REDIS_PID=""
    fi
    if [[ -n "$REDIS_DIR" ]]; then
        rm -rf "$REDIS_DIR"
        REDIS_DIR=""
    fi
}

# A port nothing listens on now (the OS's pick; another process may still take it first, so
# start_redis tries again when redis-server cannot bind).
free_port() {
    if command -v python3 >/dev/null; then
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    else
        echo $((20000 + RANDOM % 40000))
    fi
}

start_redis() {
    if [[ "${AGENTIC_SKIP_REDIS:-}" == 1 ]]; then
        echo "AGENTIC_SKIP_REDIS=1: not starting Redis; the tests that need it skip"
        return 0
    fi
    # From here a Redis is there: a test that finds none fails instead of skipping.
    export AGENTIC_REQUIRE_REDIS=1
    if [[ -n "${AGENTIC_REDIS_URL:-}" ]]; then
        echo "using the Redis at AGENTIC_REDIS_URL=$AGENTIC_REDIS_URL"
        return 0
    fi
    if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
        echo "installing redis-server from the distribution's packages"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
    fi

    REDIS_DIR="$(mktemp -d)"
    trap stop_redis EXIT
    local try port
    for try in 1 2 3 4 5; do
        port="$(free_port)"
        redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --daemonize no \
            --dir "$REDIS_DIR" --logfile "$REDIS_DIR/redis.log" &
        REDIS_PID=$!
        local wait
        for wait in $(seq 1 100); do
            if [[ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" == PONG ]]; then
                export AGENTIC_REDIS_URL="redis://127.0.0.1:$port"
                echo "Redis $(redis-server --version | grep -o 'v=[^ ]*') on $AGENTIC_REDIS_URL (pid $REDIS_PID)"
                return 0
            fi
            kill -0 "$REDIS_PID" 2>/dev/null || break # exited: the port was taken
            sleep 0.1
        done
        echo "redis-server did not answer on port $port (try $try of 5):" >&2
        tail -n 5 "$REDIS_DIR/redis.log" >&2 || true
        kill "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
        REDIS_PID=""
    done
    echo "could not start redis-server; set AGENTIC_REDIS_URL to a running one" >&2
    return 1
}
