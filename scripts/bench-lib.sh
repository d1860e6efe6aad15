# shellcheck shell=bash disable=SC2034  # $bin is read by the scripts that source this
# Sourced by the scripts/bench-*.sh benchmarks (not run on its own): the smoke switch and the
# binaries they time.
#
# SMOKE=1 is what CI runs (scripts/bench.sh --smoke): one run on small inputs, no warm-up, no
# ratio judged, and the debug binaries the test suite has just built, so a benchmark that no
# longer runs fails CI in seconds instead of rotting until someone wants its figures. A full run
# (the default) times release binaries, RUNS times each.
SMOKE=${SMOKE:-0}
export SMOKE
case "$SMOKE" in 0 | 1) ;; *) echo "SMOKE must be 0 or 1, not \"$SMOKE\"" >&2; exit 2 ;; esac

smoke() { [ "$SMOKE" = 1 ]; }

# bench_runs DEFAULT: how many timed runs (RUNS overrides DEFAULT; a smoke run makes one).
bench_runs() { if smoke; then echo 1; else echo "${RUNS:-$1}"; fi; }

# bench_build: builds the binaries the benchmarks run and sets $bin to the folder that holds
# them. Always the same packages, built together: cargo unifies features over what one command
# builds, so building `vouch` alone after `vouch` with the test doubles would relink it (minutes
# with release LTO). A full run builds release; a smoke run builds debug (its dependencies are
# opt-level 2, fast enough for small inputs) the way `cargo test --workspace` resolves it, with
# the tests, so right after the suite (as in CI) it only links the one binary the suite does not.
bench_build() {
  local dir=${CARGO_TARGET_DIR:-$PWD/target}
  if smoke; then
    cargo build --locked -q --workspace --bins --tests
    bin=$dir/debug
  else
    cargo build --release --locked -q -p vouch -p vouch-testsig -p vouch-testgh
    bin=$dir/release
  fi
}
