# The storage driver for an engine this project starts (scripts/engine.sh's dockerd, the tests' second
# dockerds in tests/e2e/tls_engine.sh, the Podman services in tests/e2e/podman_service.sh). Sourced, not run.
#
# Why not leave it to the engine: dockerd's own guess takes fuse-overlayfs whenever its program is installed
# (the suite installs it for rootless Podman), without asking whether /dev/fuse exists; in a CI container
# (no /dev/fuse, the data root on the container's own overlay filesystem) every container then fails to start.
# So the question is put to the kernel itself: an overlay mount is tried where the data will be. It works:
# overlay2 (Podman: overlay). It fails (an overlay upper directory on overlayfs, a kernel without overlay): vfs,
# which works on any filesystem. Never a driver whose device or module is missing.
#
#   choose_storage_driver DATA_ROOT OVERLAY_NAME
#     sets STORAGE_DRIVER (OVERLAY_NAME or vfs) and STORAGE_WHY (one sentence: what was tried, what answered)

choose_storage_driver() {
  local root=$1 overlay=$2 probe fs error
  mkdir -p "$root"
  fs=$(stat -fc %T "$root")
  probe=$(mktemp -d "$root/.maka-overlay-probe-XXXXXX")
  mkdir "$probe/lower" "$probe/upper" "$probe/work" "$probe/merged"
  if error=$(mount -t overlay overlay -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" \
    "$probe/merged" 2>&1); then
    umount "$probe/merged"
    STORAGE_DRIVER=$overlay
    STORAGE_WHY="an overlay mount works in $root ($fs)"
  else
    error=${error%%$'\n'*} # mount's first line; the second points at dmesg
    STORAGE_DRIVER=vfs
    STORAGE_WHY="an overlay mount fails in $root ($fs: ${error##*: }); vfs works on any filesystem"
  fi
  rm -rf "$probe"
}
