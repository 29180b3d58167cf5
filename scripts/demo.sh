#!/usr/bin/env bash
# The demo: installs what is missing, builds, and runs one trial through the full pipeline on the local
# backend. Usage (as root on Debian 12): bash scripts/demo.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"

ensure_packages "${BUILD_PACKAGES[@]}"
say "building (preset default)"
build_preset default >/dev/null
BIN=$MAKA_ROOT/build/default
HELPER=$BIN/in_container/maka-eval-helper

say "a subject prints noise and a result frame; the helper projects its stdout as the relay would"
TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
CARRIER=$(mktemp)
trap 'rm -f "$CARRIER"' EXIT
MAKA_EVAL_RESULT_TOKEN=$TOKEN sh -c 'echo "compiling..."; "$0" frame "{\"status\":\"completed\",\"score\":1}"' "$HELPER" \
  | tee "$CARRIER"
echo
"$HELPER" project --result-token "$TOKEN" < "$CARRIER"
