# Sourced by the benches (not one itself): `say`, and `perflab_binary`, which prints the
# perflab to measure — $PERFLAB when set, else the release build under
# $CARGO_TARGET_DIR (or the repository's target/), built first unless NO_BUILD is set —
# or says why there is none and returns 1.
# Needs ROOT (the repository) set by the caller.

say() { printf '%s\n' "$*" >&2; }

perflab_binary() {
    local pl
    if [ -n "${PERFLAB:-}" ]; then
        pl=$PERFLAB
    else
        if [ -z "${NO_BUILD:-}" ]; then
            say "building perflab (release)"
            (cd "$ROOT" && cargo build --release -q -p perflab-cli) || return 1
        fi
        pl=${CARGO_TARGET_DIR:-$ROOT/target}/release/perflab
    fi
    [ -x "$pl" ] || { say "no perflab binary at $pl"; return 1; }
    printf '%s\n' "$pl"
}
