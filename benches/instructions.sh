#!/bin/sh
# Instructions per call on the success path, counted by callgrind: exact, and the same on a busy
# machine, where times are not. Each variant of `benches/benches/compare.rs` runs 100 000 calls
# alone (`COMPARE_ONLY=<variant> COMPARE_ROUNDS=1`); the `direct` variant's run (the operation
# called directly, with the program's start-up and the loop) is subtracted, and the rest divided
# by 100 000: what the variant adds to calling the operation.
#
#   sh benches/instructions.sh                           # every variant
#   sh benches/instructions.sh resilient tokio_retry2    # some
#
# Needs valgrind. Run from anywhere; builds the bench first (honours CARGO_TARGET_DIR). By hand,
# like the benches: never in CI.
set -eu
cd "$(dirname "$0")/.."
binary=$(cargo bench --manifest-path benches/Cargo.toml --bench compare --no-run 2>&1 \
    | sed -n 's/.*Executable benches\/compare.rs (\(.*\))$/\1/p')
[ -x "$binary" ] || { echo "error: the compare bench did not build" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "error: valgrind is not installed" >&2; exit 1; }

# The instructions of one variant's run of 100 000 calls.
count() {
    COMPARE_ONLY=$1 COMPARE_ROUNDS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$binary" 2>&1 \
        | sed -n 's/.*Collected : //p'
}

variants="resilient resilient_every_cap backon backon_capped tokio_retry2 exec_in_memory bare_call"
[ $# -gt 0 ] || set -- $variants
for variant in "$@"; do
    case " $variants " in
        *" $variant "*) ;;
        *) echo "error: no variant named $variant; the variants are $variants" >&2; exit 2 ;;
    esac
done
direct=$(count direct)
echo "instructions per call over calling the operation directly (100 000 calls each, callgrind)"
for variant in "$@"; do
    total=$(count "$variant")
    echo "$variant $total $direct" | awk '{ printf "  %-20s %8.1f\n", $1, ($2 - $3) / 100000 }'
done
