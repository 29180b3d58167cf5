#!/usr/bin/env bash
# Runs a command of the project (default: the whole test suite) in a clean Debian 12 container whose PID 1
# reaps (`docker run --init`), on a copy of the committed tree: what a fresh machine and CI would see.
#
# Why: this development machine's PID 1 never reaps, so a killed process stays a zombie here; and a green run
# on a machine that already has every package installed can hide a missing install step. No registry is
# reachable, so the image is a debootstrap'd minimal bookworm, imported once and cached as
# maka-eval-clean:bookworm. The suite starts its own dockerd inside the container, which needs nearly every
# capability, writable cgroups (the host's, bound in: v1 hierarchies cannot be remounted inside) and
# unmasked /proc paths; `--privileged` is not used because it also asks for
# capabilities an engine that itself runs in a restricted sandbox (as here: no CAP_SYS_RESOURCE) cannot grant.
#
# Usage (as root, with an engine running): bash scripts/clean-room.sh [--ci-container] [COMMAND...]
#   default COMMAND: bash scripts/test.sh
#   --ci-container: as a CI job's container is usually given: the inner dockerd's data on the container's own
#     overlay root (no tmpfs there, so overlay2 cannot be used and scripts/storage.sh picks vfs). Either way the
#     container has no /dev/fuse (no --device, no --privileged).
#   MAKA_CLEAN_REF=<git ref> picks what to copy (default HEAD; uncommitted changes are never included)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

data_root=(--tmpfs /var/lib/docker:exec)
mode="the inner dockerd's data on a tmpfs"
if [ "${1:-}" = --ci-container ]; then
  shift
  data_root=()
  mode="as a CI container: the inner dockerd's data on the container's overlay root"
fi
image=$(clean_image)

tree=$(mktemp -d /var/tmp/maka-tree-XXXXXX)
chmod 0755 "$tree" # as a CI checkout: other users may enter it (the rootless Podman tests' relay runs as one)
git -C "$MAKA_ROOT" archive "${MAKA_CLEAN_REF:-HEAD}" | tar -C "$tree" -x
(($# > 0)) || set -- bash scripts/test.sh
say "in a clean container (--init, no /dev/fuse, $mode): $*"
status=0
# By default the inner dockerd keeps its images on a tmpfs, where overlay2 works (the container's own overlay
# root cannot hold it).
bounding=$(awk '/^CapBnd/ {print $2}' /proc/self/status)
drop=()
((0x$bounding & (1 << 24))) || drop=(--cap-drop SYS_RESOURCE)
# ../shared (the original's reference code, the runners kit) beside the tree as on the host, read-only:
# the tests that use it then run or skip for their own reasons (a bare Debian 12 has no pydantic 2).
shared=()
[ -d "$MAKA_ROOT/../shared" ] && shared=(-v "$(cd "$MAKA_ROOT/../shared" && pwd):/shared:ro")
# npm as this machine has it configured (its registry, and the CA bundle it trusts where it names one): the
# signed-result tests install @sigstore/core with it (tests/e2e/attestation_test.sh).
npm_config=()
if command -v npm >/dev/null; then
  registry=$(npm config get registry 2>/dev/null || true)
  cafile=$(npm config get cafile 2>/dev/null || true)
  [ -z "$registry" ] || [ "$registry" = undefined ] || npm_config+=(-e "NPM_CONFIG_REGISTRY=$registry")
  if [ -n "$cafile" ] && [ -f "$cafile" ]; then
    npm_config+=(-v "$cafile:/etc/maka-npm-ca.crt:ro" -e NPM_CONFIG_CAFILE=/etc/maka-npm-ca.crt)
  fi
fi
docker run --rm --init --cap-add ALL "${drop[@]}" "${npm_config[@]}" --security-opt seccomp=unconfined \
  --security-opt apparmor=unconfined --security-opt systempaths=unconfined "${shared[@]}" \
  -v /sys/fs/cgroup:/sys/fs/cgroup:rw "${data_root[@]}" -v "$tree:/src" -w /src "$image" "$@" ||
  status=$?
rm -rf "$tree"
exit $status
