#!/usr/bin/env bash
# run -i, -t and --timeout as a person uses them (issue: manual debugging), on the local backend and, with
# MAKA_EVAL_E2E=1, in a fresh Docker container. A terminal is driven through tmux as a person would: keys
# typed with send-keys, the screen read with capture-pane; every wait is for text on the screen or a file,
# bounded, never a fixed sleep.
#   terminal_test.sh RELAY CASE      CASE: pipe | pipe-docker | timeout | tty-local | tty-docker
# Exit 0 passed, 1 failed (saying what), 77 skipped (saying why). MAKA_EVAL_TEST_HELPER: the helper that goes
# into the container (default: the relay's own).
set -uo pipefail
relay=${1:?usage: terminal_test.sh RELAY CASE}
case_name=${2:?usage: terminal_test.sh RELAY CASE}
work=$(mktemp -d)
socket=maka-terminal-$$
container=
cleanup() {
  tmux -L "$socket" kill-server 2>/dev/null || true
  [ -z "$container" ] || timeout 60 docker rm -f "$container" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAILED: $*"; [ ! -f "$work/screen" ] || { echo "--- screen:"; cat "$work/screen"; }; exit 1; }
skip() { echo "skipped: $*"; exit 77; }

# screen: what the terminal shows now (scrollback included).
screen() { tmux -L "$socket" capture-pane -t t -p -S -200 >"$work/screen"; cat "$work/screen"; }
# wait_screen PATTERN [SECONDS]: until the screen matches the extended regex.
wait_screen() {
  local deadline=$((SECONDS + ${2:-30}))
  while ((SECONDS < deadline)); do
    screen | grep -qE "$1" && return 0
    sleep 0.1
  done
  fail "the screen never showed /$1/"
}
keys() { tmux -L "$socket" send-keys -t t "$@"; }
# in_container: a fresh BusyBox container for the case, named in env_args (--env, and --helper if given).
env_args=()
in_container() {
  [ "${MAKA_EVAL_E2E:-}" = 1 ] || skip "MAKA_EVAL_E2E is not 1: no engine prepared for this run"
  container=maka-terminal-$$
  timeout 60 docker run -d --name "$container" maka-eval-test-busybox:test sleep 600 >/dev/null ||
    fail "docker run of a fresh BusyBox container failed or took over 60 s"
  env_args=(--env "docker:$container")
  # Under the sanitizers the build's own helper is not static: the release build's goes in, as for the
  # other end-to-end tests (tests/e2e/engine_fixture.hpp).
  [ -z "${MAKA_EVAL_TEST_HELPER:-}" ] || env_args+=(--helper "$MAKA_EVAL_TEST_HELPER")
}

case "$case_name" in
pipe-docker)
  # What the local case checks for the helper's framing, through an engine's exec stream: an unread stdin
  # far past the window, and a file whose every byte must arrive in order (raw bytes after each `input`).
  # Each relay is bounded (a hang names its step and shows the relay's phase log, not a ctest timeout).
  in_container
  bounded() { timeout -k 10 120 "$relay" "$@" 2>>"$work/relay.log"; }
  hung() { [ "$1" != 124 ] || fail "$2 did not end within 120 s; the relay's log: $(tail -20 "$work/relay.log")"; }
  # Twenty times: the helper exits after its report while input is still on its way, and a relay whose
  # trial waited on that write hung for ever about one time in six (its write never completed).
  for round in $(seq 1 20); do
    head -c $((16 << 20)) /dev/zero | bounded run -i --json "${env_args[@]}" -- true >"$work/json"
    status=${PIPESTATUS[1]}
    [ "$status" != 137 ] || status=124 # the relay ignored timeout's TERM too: it hung all the same
    hung "$status" "an unread 16 MiB stdin (round $round)"
    [ "$status" = 0 ] || fail "an unread 16 MiB stdin (round $round): relay exit $status"
    grep -q '"exitCode":0' "$work/json" || fail "an unread 16 MiB stdin (round $round): $(cat "$work/json")"
  done
  head -c $((24 << 20)) /dev/urandom >"$work/in"
  want=$(sha256sum <"$work/in" | cut -d' ' -f1)
  bounded run -i --follow "${env_args[@]}" -- sha256sum <"$work/in" >"$work/out"
  hung $? "a 24 MiB file through -i"
  got=$(head -1 "$work/out" | cut -d' ' -f1)
  [ "$got" = "$want" ] || fail "a 24 MiB file through -i arrived as $got, sent $want"
  printf 'a\nb\n' | bounded run -i --follow "${env_args[@]}" -- wc -l >"$work/out"
  hung "${PIPESTATUS[1]}" "printf 'a\\nb\\n' | run -i -- wc -l"
  got=$(head -1 "$work/out" | tr -d ' ')
  [ "$got" = 2 ] || fail "printf 'a\\nb\\n' | run -i -- wc -l printed $got"
  ;;
pipe)
  out=$(printf 'a\nb\n' | "$relay" run -i --quiet --follow -- wc -l 2>"$work/err") || fail "run -i exited $?"
  [ "$(printf '%s\n' "$out" | head -1 | tr -d ' ')" = 2 ] || fail "run -i -- wc -l printed: $out"
  ! grep -q "not forwarded" "$work/err" || fail "run -i said stdin was not forwarded"
  out=$(printf 'a\nb\n' | "$relay" run --follow -- wc -l 2>"$work/err") || fail "run exited $?"
  [ "$(printf '%s\n' "$out" | head -1 | tr -d ' ')" = 0 ] || fail "without -i the subject read stdin: $out"
  [ "$(grep -c "stdin is a pipe and is not forwarded" "$work/err")" = 1 ] || fail "no one-line note: $(cat "$work/err")"
  # A subject that never reads its stdin, given far more than the helper's window: the trial still ends.
  head -c $((16 << 20)) /dev/zero | "$relay" run -i --quiet --json -- true >"$work/json"
  status=${PIPESTATUS[1]} # head's SIGPIPE once the relay is done is expected
  [ "$status" = 0 ] || fail "an unread 16 MiB stdin: relay exit $status"
  grep -q '"exitCode":0' "$work/json" || fail "an unread 16 MiB stdin: $(cat "$work/json")"
  # A file on stdin: every byte arrives, in order.
  head -c $((3 << 20)) /dev/urandom >"$work/in"
  want=$(sha256sum <"$work/in" | cut -d' ' -f1)
  got=$("$relay" run -i --quiet --follow -- sha256sum <"$work/in" | head -1 | cut -d' ' -f1)
  [ "$got" = "$want" ] || fail "a 3 MiB file through -i arrived as $got, sent $want"
  ;;
timeout)
  started=$SECONDS
  "$relay" run --quiet --timeout 1s --json -- sleep 60 >"$work/json"
  code=$?
  [ "$code" = 6 ] || fail "--timeout 1s: relay exit $code, not 6 (cancelled)"
  grep -q '"termination":"framework_timeout"' "$work/json" || fail "executed: $(cat "$work/json")"
  grep -q 'the time limit of 1s (--timeout) elapsed' "$work/json" || fail "the limit is not named: $(cat "$work/json")"
  ((SECONDS - started < 30)) || fail "--timeout 1s took $((SECONDS - started)) s"
  "$relay" run --quiet --timeout 1s -- sleep 60 >"$work/summary"
  grep -q "relay exit  6 (cancelled: framework timeout: the time limit of 1s" "$work/summary" ||
    fail "the summary line does not name the limit: $(cat "$work/summary")"
  "$relay" run --timeout 5x -- true 2>"$work/err" && fail "--timeout 5x was accepted"
  grep -q -- "--timeout takes a duration" "$work/err" || fail "--timeout 5x: $(cat "$work/err")"
  ;;
tty-local | tty-docker)
  command -v tmux >/dev/null || skip "tmux is not installed (Debian: apt-get install tmux)"
  [ "$case_name" = tty-local ] || in_container
  export API_KEY=terminal-canary-$$
  tmux -L "$socket" new-session -d -s t -x 100 -y 30 "bash --norc --noprofile" || fail "tmux did not start"
  keys "PS1='prompt> '; stty -g > $work/stty-before; echo ready-\$((1+1))" Enter
  wait_screen "ready-2"
  keys "$relay run -it --credential API_KEY ${env_args[*]} -- sh" Enter
  wait_screen "^(/ )?# ?$" # the subject's shell, at its prompt
  keys 'echo "in=$((6*7)) key=$API_KEY"; stty size' Enter
  wait_screen "in=42 key=\*\*\*"
  wait_screen "^30 100"
  screen | grep -q "terminal-canary" && fail "the credential's value is on the screen"
  tmux -L "$socket" resize-window -t t -x 120 -y 40
  # The new size reaches the container's terminal after the relay's SIGWINCH: a `stty size` typed before it
  # arrives rightly says the old one. Asked again (as a person would) until it says the new one, for 30 s.
  for ((asked = 0; asked < 10; asked++)); do
    keys 'stty size' Enter
    screen | grep -qE "^40 120" && break
    sleep 3
    screen | grep -qE "^40 120" && break
  done
  wait_screen "^40 120" 1
  keys 'sleep 300' Enter
  wait_screen "# sleep 300$"
  keys C-c # the terminal's interrupt: SIGINT to the subject's foreground group, made in the container
  wait_screen "\^C"
  keys 'echo "rc=$?"' Enter
  wait_screen "^rc=130"
  keys 'tty; exit 3' Enter
  wait_screen "relay exit"
  screen | grep -qE "^/dev/pts/[0-9]+" || fail "the subject's stdin is not a terminal"
  screen | grep -q "executed    exited, exit code 3" || fail "exit 3 was not reported"
  keys "stty -g > $work/stty-after; echo saved-\$((2+2))" Enter
  wait_screen "saved-4"
  cmp -s "$work/stty-before" "$work/stty-after" || fail "the terminal was left changed: $(cat "$work/stty-after")"
  # The escape: Ctrl-] three times cancels the trial through the settle path (the shell ignores TERM: a
  # short TERM grace).
  keys "clear; $relay run -it --term-grace-ms 200 ${env_args[*]} -- sh" Enter
  wait_screen "^(/ )?# ?$"
  keys 'echo up-$((3+4))' Enter
  wait_screen "up-7"
  keys C-] C-] C-]
  wait_screen "relay exit  6 \(cancelled: framework timeout: the terminal's escape"
  keys "stty -g > $work/stty-after; echo saved-\$((3+3))" Enter
  wait_screen "saved-6"
  cmp -s "$work/stty-before" "$work/stty-after" || fail "the escape left the terminal changed"
  ;;
*)
  echo "unknown case $case_name" >&2
  exit 2
  ;;
esac
echo "passed: $case_name"
