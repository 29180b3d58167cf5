#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs every test.
# Usage (as root on Debian 12): bash scripts/test.sh        (.ci/run calls exactly this)
#   1. release build with -Werror; unit, integration and end-to-end tests through ctest — the e2e tests run
#      on a real Docker engine: an engine already running is used, else Debian's docker.io is installed and
#      dockerd started (and stopped again at the end); the test images are built FROM scratch. The Podman
#      tests (label podman) start a Podman service of their own per mode, rootful and rootless
#      (tests/e2e/podman_service.sh), and skip (77) saying why where this machine cannot run one
#   2. clang ASan+UBSan build; the unit and integration tests again under it, and the e2e tests when the
#      engine is up
#   3. each libFuzzer target for a bounded time (MAKA_FUZZ_SECONDS, default 45) from its seed corpus
#   4. clang-format and clang-tidy (version 14) on every project source
# Ends with one line: "N passed, N failed" over every test, fuzz target and lint check.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
source "$MAKA_ROOT/scripts/engine.sh"
set -e
ensure_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
ensure_node
set +e

passed=0
failed=0
failures=()
record() { # record NAME STATUS
  if [ "$2" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$1"); fi
}
# ctest_counts LOG — adds the counts from a ctest summary line.
ctest_counts() {
  local line total bad
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" | tail -1)
  if [ -z "$line" ]; then record "ctest:$1" 1; return; fi
  bad=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
  total=$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$line")
  passed=$((passed + total - bad))
  failed=$((failed + bad))
  ((bad == 0)) || failures+=("$(grep -A1000 'The following tests FAILED' "$1" | tail -n +2)")
}
# failure_output LOG — what each failed test printed (ctest --output-on-failure), so a CI log says why.
failure_output() {
  awk '/\*\*\*(Failed|Exception|Timeout)/ {show = 1; lines = 0}
       /^ *[0-9]+\/[0-9]+ Test +#/ && !/\*\*\*/ {show = 0}
       show && lines++ < 60' "$1"
}
# skip_reasons LOG — why tests skipped (each says so on its output, "skipped: WHY"; the runners' "SKIPPED:"),
# once per reason with how many, so that a run's log tells a skip for the machine from a missing install step.
skip_reasons() {
  [ -f "$1" ] || return 0
  grep -hoiE 'skipped: .*' "$1" | sed -E 's/^[^:]*: //' | sort | uniq -c | sort -rn | head -20 |
    sed -E 's/^ *([0-9]+) /  skipped (\1 tests): /'
}
LOGS=$(mktemp -d)
trap 'engine_down; rm -rf "$LOGS"' EXIT

say "1/4 release build (-Werror) and tests"
if build_preset ci >"$LOGS/build-ci.log" 2>&1; then
  if engine_up && build_test_images "$MAKA_ROOT/build/ci"; then
    export MAKA_EVAL_E2E=1
  else
    record "docker engine for the e2e tests" 1
  fi
  ctest --preset ci -j2 --output-on-failure 2>&1 | tee "$LOGS/ctest-ci.log" |
    grep -E '^\s*[0-9]+/[0-9]+ Test|tests passed|FAILED' || true
  failure_output "$LOGS/ctest-ci.log"
  ctest_counts "$LOGS/ctest-ci.log"
  skip_reasons "$MAKA_ROOT/build/ci/Testing/Temporary/LastTest.log"
else
  tail -50 "$LOGS/build-ci.log"
  record "build ci" 1
fi

say "2/4 ASan+UBSan build and tests"
if build_preset sanitize >"$LOGS/build-san.log" 2>&1; then
  ctest --preset sanitize -j2 --output-on-failure 2>&1 | tee "$LOGS/ctest-san.log" |
    grep -E 'tests passed|FAILED' || true
  failure_output "$LOGS/ctest-san.log"
  ctest_counts "$LOGS/ctest-san.log"
  # The docker and bridge backends only run end to end: under the sanitizers too, with the release build's
  # static helper going into the containers. The real runners' trials (label runners, ~9 minutes) run once,
  # in step 1: what they add is the runners' code, not more of the relay's.
  if [ "${MAKA_EVAL_E2E:-}" = 1 ]; then
    MAKA_EVAL_TEST_HELPER="$MAKA_ROOT/build/ci/in_container/maka-eval-helper" \
      ctest --test-dir "$MAKA_ROOT/build/sanitize" -L e2e -LE runners -j2 --output-on-failure 2>&1 |
      tee "$LOGS/ctest-san-e2e.log" | grep -E 'tests passed|FAILED' || true
    failure_output "$LOGS/ctest-san-e2e.log"
    ctest_counts "$LOGS/ctest-san-e2e.log"
  fi
else
  tail -50 "$LOGS/build-san.log"
  record "build sanitize" 1
fi

say "3/4 fuzz targets, ${MAKA_FUZZ_SECONDS:-45} s each"
if build_preset fuzz >"$LOGS/build-fuzz.log" 2>&1; then
  for target in "$MAKA_ROOT"/tests/fuzz/corpus/*/; do
    name=$(basename "$target")
    work=$LOGS/corpus-$name
    mkdir -p "$work"
    "$MAKA_ROOT/build/fuzz/tests/fuzz/$name" -max_total_time="${MAKA_FUZZ_SECONDS:-45}" -max_len=8192 \
      -artifact_prefix="$LOGS/" "$work" "$target" >"$LOGS/fuzz-$name.log" 2>&1
    status=$?
    echo "$name: $(grep -E '^Done|DONE' "$LOGS/fuzz-$name.log" | tail -1) (exit $status)"
    ((status == 0)) || tail -30 "$LOGS/fuzz-$name.log"
    record "fuzz $name" $status
  done
else
  tail -50 "$LOGS/build-fuzz.log"
  record "build fuzz" 1
fi

say "4/4 clang-format and clang-tidy"
mapfile -t sources < <(cd "$MAKA_ROOT" && git ls-files '*.cpp' '*.hpp' 2>/dev/null || find posix contracts policy in_container relay tests -name '*.[ch]pp')
(cd "$MAKA_ROOT" && clang-format-14 --dry-run --Werror "${sources[@]}") >"$LOGS/format.log" 2>&1
status=$?
((status == 0)) || head -40 "$LOGS/format.log"
record "clang-format" $status
mapfile -t tidy_sources < <(printf '%s\n' "${sources[@]}" | grep -E '^(posix|contracts|policy|in_container|relay)/.*\.cpp$' | grep -v json_impl.cpp)
(cd "$MAKA_ROOT" && printf '%s\n' "${tidy_sources[@]}" | xargs -P2 -n4 clang-tidy-14 -p build/ci --quiet) >"$LOGS/tidy.log" 2>&1
status=$?
((status == 0)) || grep -E 'error:|warning:' "$LOGS/tidy.log" | head -40
record "clang-tidy" $status

if ((failed)); then
  printf '\nfailed:\n'
  printf '  %s\n' "${failures[@]}"
fi
printf '\ntotal: %d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
