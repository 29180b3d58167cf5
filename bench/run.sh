#!/usr/bin/env bash
# Benchmarks: builds what it needs, starts a Docker engine when none runs (and stops it again), builds the
# test images, and prints one table — medians with min/max over repeated runs, every ratio against a
# baseline measured in the same run. Usage (as root on Debian 12): bash bench/run.sh [--quick]
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$MAKA_ROOT/scripts/engine.sh"
ensure_packages "${BUILD_PACKAGES[@]}" docker.io busybox-static podman catatonit uidmap slirp4netns fuse-overlayfs procps
say "building (preset default)"
build_preset default >/dev/null
trap engine_down EXIT
engine_up
build_test_images "$MAKA_ROOT/build/default"
python3 "$MAKA_ROOT/bench/bench.py" --build "$MAKA_ROOT/build/default" "$@"
