# Shared by the end-to-end case scripts (attestation_test.sh, readme_test.sh); sourced, not run. A scratch
# folder and a container that go on exit, the exit codes ctest reads (0 passed, 1 failed saying what, 77
# skipped saying why), and a fresh container for a case that needs one.
work=$(mktemp -d)
container=
cleanup() {
  [ -z "$container" ] || timeout 60 docker rm -f "$container" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAILED: $*"; exit 1; }
skip() { echo "skipped: $*"; exit 77; }

# fresh_container PREFIX: a fresh BusyBox container, named in $container; `helper_args` holds --helper for the
# helper that goes in (MAKA_EVAL_TEST_HELPER: under the sanitizers the build's own is not static, so the
# release build's goes in, as for the other end-to-end tests).
fresh_container() {
  [ "${MAKA_EVAL_E2E:-}" = 1 ] || skip "MAKA_EVAL_E2E is not 1: no engine prepared for this run"
  container=$1-$$
  timeout 60 docker run -d --name "$container" maka-eval-test-busybox:test sleep 600 >/dev/null ||
    fail "docker run of a fresh BusyBox container failed or took over 60 s"
  helper_args=()
  [ -z "${MAKA_EVAL_TEST_HELPER:-}" ] || helper_args=(--helper "$MAKA_EVAL_TEST_HELPER")
}
