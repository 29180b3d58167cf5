#!/usr/bin/env bash
# The demo: installs what is missing, builds, and runs one trial through the full pipeline on the local
# backend — relay → loopback orchestrator over TCP (ready/execute/executed/verify) → helper session →
# supervised subject → result frame → executed. Usage (as root on Debian 12): bash scripts/demo.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"

ensure_packages "${BUILD_PACKAGES[@]}"
say "building (preset default)"
build_preset default >/dev/null
BIN=$MAKA_ROOT/build/default

say "a trial: the subject reads its environment and a credential, prints noise and a result frame"
export DEMO_API_KEY="demo-credential-$$"
"$BIN/relay/maka-eval-relay" run \
  -e "HELPER=$BIN/in_container/maka-eval-helper" -e TASK=demo --credential DEMO_API_KEY -- \
  sh -c 'echo "working in $PWD on $TASK"; echo "credential has ${#DEMO_API_KEY} characters" >&2
         "$HELPER" frame "{\"status\":\"completed\",\"task\":\"$TASK\"}"'

say "the same trial as one JSON object (--json), then a cancelled one: SIGTERM stops a TERM-ignoring subject"
"$BIN/relay/maka-eval-relay" run --json --quiet -- sh -c 'exit 3'
"$BIN/relay/maka-eval-relay" run --term-grace-ms 300 -- sh -c 'trap "" TERM; sleep 60' &
relay=$!
sleep 1
kill -TERM "$relay"
wait "$relay" || echo "(relay exit $? = cancelled, as the original re-raised the cancellation)"
