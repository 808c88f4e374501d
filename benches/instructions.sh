#!/bin/sh
# Instructions counted by callgrind: exact, and the same on a busy machine, where times are not.
#
# The success path: each variant of `benches/benches/compare.rs` runs 100 000 calls alone
# (`COMPARE_ONLY=<variant> COMPARE_ROUNDS=1`); the `direct` variant's run (the operation called
# directly, with the program's start-up and the loop) is subtracted, and the rest divided by
# 100 000: what the variant adds to calling the operation.
#
# Classification: both layers' verdicts of each message of `benches/benches/classify.rs`'s sets
# (`CLASSIFY_ROUNDS`): a run of 11 rounds minus a run of 1, over 10 rounds of the set's messages.
#
#   sh benches/instructions.sh                           # every variant, then classification
#   sh benches/instructions.sh resilient tokio_retry2    # some variants
#   sh benches/instructions.sh classify                  # classification alone
#   sh benches/instructions.sh exec_durable exec_in_memory   # what a durable run adds to an exec
#
# Needs valgrind. Run from anywhere; builds the bench first (honours CARGO_TARGET_DIR). By hand,
# like the benches: never in CI.
set -eu
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "error: valgrind is not installed" >&2; exit 1; }
built=$(cargo bench --manifest-path benches/Cargo.toml --bench compare --bench classify --no-run 2>&1)
binary=$(echo "$built" | sed -n 's/.*Executable benches\/compare.rs (\(.*\))$/\1/p')
classify=$(echo "$built" | sed -n 's/.*Executable benches\/classify.rs (\(.*\))$/\1/p')
[ -x "$binary" ] && [ -x "$classify" ] || { echo "error: the benches did not build:" >&2; echo "$built" >&2; exit 1; }

# The instructions of one variant's run of 100 000 calls.
count() {
    COMPARE_ONLY=$1 COMPARE_ROUNDS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$binary" 2>&1 \
        | sed -n 's/.*Collected : //p'
}

# The set `$1`'s size, and the instructions of `$2` rounds of both verdicts over it.
classify_count() {
    out=$(CLASSIFY_ONLY=$1 CLASSIFY_ROUNDS=$2 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$classify" 2>&1)
    echo "$(echo "$out" | sed -n 's/.*: \([0-9]*\) messages.*/\1/p') $(echo "$out" | sed -n 's/.*Collected : //p')"
}

variants="resilient resilient_every_cap backon backon_capped tokio_retry2 exec_in_memory bare_call exec_durable"
[ $# -gt 0 ] || set -- $variants classify
with_classify=false
for variant in "$@"; do
    [ "$variant" = classify ] && with_classify=true
done
set -- $(for variant in "$@"; do [ "$variant" = classify ] || echo "$variant"; done)
for variant in "$@"; do
    case " $variants " in
        *" $variant "*) ;;
        *) echo "error: no variant named $variant; the variants are $variants" >&2; exit 2 ;;
    esac
done
if [ $# -gt 0 ]; then
    direct=$(count direct)
    echo "instructions per call over calling the operation directly (100 000 calls each, callgrind)"
    for variant in "$@"; do
        total=$(count "$variant")
        echo "$variant $total $direct" | awk '{ printf "  %-20s %8.1f\n", $1, ($2 - $3) / 100000 }'
    done
fi
if $with_classify; then
    echo "instructions per message, both layers' verdicts from one scan (callgrind)"
    for set in classify_corpus classify_long_pages; do
        one=$(classify_count "$set" 1)
        eleven=$(classify_count "$set" 11)
        echo "$set $one $eleven" | awk '{ printf "  %-20s %8.0f (%d messages)\n", $1, ($5 - $3) / (10 * $2), $2 }'
    done
fi
