#!/usr/bin/env bash
# cargo fuzz (libFuzzer) over the targets in fuzz/fuzz_targets/.
#
#   scripts/fuzz.sh build           build every target
#   scripts/fuzz.sh run [SECONDS]   run every target for SECONDS each (default 30)
#   scripts/fuzz.sh list            list the targets
#
# Installs cargo-fuzz when missing. Uses `cargo +nightly fuzz` when rustup
# lists a nightly toolchain, else `RUSTC_BOOTSTRAP=1 cargo fuzz` on stable.
# `run` prints per target libFuzzer's final coverage (`cov:`) and executions
# per second, writes new inputs to target/fuzz-corpus/<target>/ (the seeds
# in fuzz/corpus/<target>/ are read, never written), crashes to
# fuzz/artifacts/<target>/, and ends with `fuzz: N passed, M failed`; it
# exits non-zero when any target crashed.
#
# Environment: FUZZ_BUILD (release, the default: optimised, one codegen
# unit as cargo-fuzz sets it; dev: cargo's dev profile, unoptimised, which
# builds from cold with about 40 % of the CPU time but runs the targets 5
# to 45 times slower, see benchmarks/fuzz.md: what `make fuzz-smoke`, and
# so `make test`, use; assertions, overflow checks included, are on in
# both), FUZZ_SANITIZER (default none: the targets are safe Rust; `address`
# for ASan), FUZZ_TARGETS (a space-separated subset), FUZZ_JOBS (build
# jobs, CARGO_BUILD_JOBS), FUZZ_MAX_LEN (libFuzzer -max_len, default 8192),
# FUZZ_SEED (libFuzzer -seed: a fixed seed replays the same mutations, as
# `make test` does; unset, libFuzzer picks one), FUZZ_PARALLEL (targets run
# at a time, default 1; `make fuzz-smoke` runs 2, one a core: their exec/s
# are then each measured beside another).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SANITIZER="${FUZZ_SANITIZER:-none}"
# The profile flags, the same for `build` and `run` (else run rebuilds).
case "${FUZZ_BUILD:-release}" in
  release) PROFILE=(-a) ;; # release optimisation, debug assertions on
  dev) PROFILE=(--dev) ;;  # the dev profile: debug assertions on, unoptimised
  *) echo "fuzz: FUZZ_BUILD is release or dev, not '$FUZZ_BUILD'" >&2; exit 2 ;;
esac
MAX_LEN="${FUZZ_MAX_LEN:-8192}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"

ensure_cargo_fuzz() {
  if ! cargo fuzz --version >/dev/null 2>&1; then
    # --debug: cargo-fuzz only drives cargo and libFuzzer, so its own speed
    # does not matter, and an unoptimised build took 25 s instead of 42 s
    # on 2 cores.
    echo "fuzz: installing cargo-fuzz (cargo install cargo-fuzz --locked --debug)" >&2
    cargo install cargo-fuzz --locked --debug
  fi
}

# The command that runs cargo fuzz: nightly when rustup has one.
FUZZ=()
pick_toolchain() {
  if command -v rustup >/dev/null 2>&1 && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    FUZZ=(cargo +nightly fuzz)
    echo "fuzz: toolchain nightly ($(rustc +nightly --version))" >&2
  else
    export RUSTC_BOOTSTRAP=1
    FUZZ=(cargo fuzz)
    echo "fuzz: toolchain stable with RUSTC_BOOTSTRAP=1 ($(rustc --version))" >&2
  fi
}

targets() {
  if [[ -n ${FUZZ_TARGETS:-} ]]; then
    printf '%s\n' $FUZZ_TARGETS
  else
    (cd fuzz && "${FUZZ[@]}" list)
  fi
}

build() {
  # cargo fuzz build has no --jobs; cargo reads the count from here.
  [[ -n ${FUZZ_JOBS:-} ]] && export CARGO_BUILD_JOBS="$FUZZ_JOBS"
  local start=$SECONDS
  (cd fuzz && "${FUZZ[@]}" build "${PROFILE[@]}" -s "$SANITIZER")
  echo "fuzz: build (${FUZZ_BUILD:-release}) took $((SECONDS - start)) s" >&2
}

# run_one TARGET SECONDS: libFuzzer on TARGET, its output in the target's
# log and its exit status in the log's .status file.
run_one() {
  local target="$1" seconds="$2"
  local log="$CARGO_TARGET_DIR/fuzz-logs/$target.log"
  local work="$CARGO_TARGET_DIR/fuzz-corpus/$target"
  mkdir -p "$work" "fuzz/corpus/$target"
  local status=0
  local seed=()
  [[ -n ${FUZZ_SEED:-} ]] && seed=(-seed="$FUZZ_SEED")
  (cd fuzz && "${FUZZ[@]}" run "${PROFILE[@]}" -s "$SANITIZER" "$target" "$work" "corpus/$target" -- \
    -max_total_time="$seconds" -max_len="$MAX_LEN" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "${seed[@]}") >"$log" 2>&1 || status=$?
  echo "$status" >"$log.status"
}

run_all() {
  local seconds="${1:-30}" parallel="${FUZZ_PARALLEL:-1}" passed=0 failed=0
  [[ $parallel =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: FUZZ_PARALLEL is a positive number, not '$parallel'" >&2; exit 2; }
  build
  mkdir -p "$CARGO_TARGET_DIR/fuzz-logs"
  local all=() target
  mapfile -t all < <(targets)
  # PARALLEL targets at a time (each libFuzzer process uses one core),
  # reported in order once each batch is done.
  local i
  for ((i = 0; i < ${#all[@]}; i += parallel)); do
    echo "fuzz: running ${all[*]:i:parallel} for $seconds s" >&2
    for target in "${all[@]:i:parallel}"; do
      run_one "$target" "$seconds" &
    done
    wait
  done
  printf '%-22s %10s %8s %8s  %s\n' target exec/s cov runs result
  for target in "${all[@]}"; do
    local log="$CARGO_TARGET_DIR/fuzz-logs/$target.log" status
    status="$(cat "$log.status")"
    # libFuzzer's last status line ("#N DONE cov: C ft: F ... exec/s: E")
    # or, on a crash, the last line it printed before it.
    local line cov execs runs
    line="$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -n 1 || true)"
    cov="$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$line")"
    execs="$(grep -E '^stat::average_exec_per_sec:' "$log" | awk '{print $2}' | tail -n 1)"
    [[ -z $execs ]] && execs="$(sed -nE 's/.* exec\/s: ([0-9]+).*/\1/p' <<<"$line")"
    runs="$(grep -E '^stat::number_of_executed_units:' "$log" | awk '{print $2}' | tail -n 1)"
    if (( status == 0 )); then
      passed=$((passed + 1))
      printf '%-22s %10s %8s %8s  %s\n' "$target" "${execs:-?}" "${cov:-?}" "${runs:-?}" ok
    else
      failed=$((failed + 1))
      printf '%-22s %10s %8s %8s  %s\n' "$target" "${execs:-?}" "${cov:-?}" "${runs:-?}" "CRASH (exit $status, log $log)"
      grep -E 'panicked at|ERROR: libFuzzer|SUMMARY|Test unit written to' "$log" | head -n 5 | sed 's/^/    /' || true
    fi
  done
  echo "fuzz: $passed passed, $failed failed"
  (( failed == 0 ))
}

main() {
  local command="${1:-run}"
  shift || true
  ensure_cargo_fuzz
  pick_toolchain
  case "$command" in
    build) build ;;
    run) run_all "${1:-30}" ;;
    list) targets ;;
    *) echo "usage: scripts/fuzz.sh build | run [SECONDS] | list" >&2; exit 2 ;;
  esac
}

main "$@"
