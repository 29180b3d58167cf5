#!/usr/bin/env bash
# Benchmarks: builds what it needs, starts a Docker engine when none runs (and stops it again), builds the
# test images, and prints one table — medians with min/max over repeated runs, every ratio against a
# baseline measured in the same run. Usage (as root on Debian 12): bash bench/run.sh [--quick] [--only NAME]
#   MAKA_BENCH_AGAINST=REF (default ee4f084, the build before the last round's regression; `none` for no
#   other build): that commit's relay and helper are built once into build/against-REF from `git archive`
#   and measured beside this build in the same run (`versus`, and every round of `cold-connect`), so that a
#   regression shows as a ratio, not as a figure compared across days.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$MAKA_ROOT/scripts/engine.sh"
ensure_packages "${BUILD_PACKAGES[@]}" docker.io busybox-static podman catatonit uidmap slirp4netns fuse-overlayfs procps
say "building (preset default)"
build_preset default >/dev/null
against=()
ref=${MAKA_BENCH_AGAINST:-ee4f084}
if [ "$ref" != none ]; then
  other=$MAKA_ROOT/build/against-$ref
  if [ ! -x "$other/build/default/relay/maka-eval-relay" ]; then
    say "building $ref's relay and helper into $other (once)"
    rm -rf "$other" && mkdir -p "$other"
    if git -C "$MAKA_ROOT" archive "$ref" | tar -C "$other" -x; then
      (cmake --preset default -S "$other" >/dev/null &&
        cmake --build "$other/build/default" --target maka-eval-relay maka-eval-helper >/dev/null) ||
        { echo "bench: $ref does not build here; measuring without it" >&2; rm -rf "$other"; }
    else
      echo "bench: $ref is not in this clone (a shallow checkout?); measuring without it" >&2
      rm -rf "$other"
    fi
  fi
  [ ! -x "$other/build/default/relay/maka-eval-relay" ] || against=(--against "$other/build/default")
fi
trap engine_down EXIT
engine_up
build_test_images "$MAKA_ROOT/build/default"
# A whole run (no --only, no --quick) is written to bench/results.md, the file every doc's figures come from.
out=(--out "$MAKA_ROOT/bench/results.md")
for arg in "$@"; do case $arg in --only | --only=* | --quick) out=() ;; esac; done
python3 "$MAKA_ROOT/bench/bench.py" --build "$MAKA_ROOT/build/default" "${against[@]}" "${out[@]}" "$@"
