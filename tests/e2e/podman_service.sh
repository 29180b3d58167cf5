#!/usr/bin/env bash
# A Podman service of the tests' own, for tests/e2e/podman_test.cpp: Debian 12's Podman 4.3 behind its
# Docker-compatible API, as a user points the relay at it (DOCKER_HOST=unix://…/podman.sock).
#   podman_service.sh start DIR rootful|rootless
#   podman_service.sh stop DIR
# rootful: `podman system service` as root. rootless: as the user maka-podman (created with subuid/subgid
# ranges when missing), and the relay of the tests runs as that user too.
# Everything is under DIR: its own --root, --runroot, --tmpdir, containers.conf and socket; the service is
# stopped by its pid, its containers and storage removed. The test images are loaded from the main engine
# (`docker save | podman load`): no registry.
# Where the machine cannot run a mode, DIR/skip holds the reason and the tests skip (77) saying it.
#
# What this machine needs, detected and said in DIR/service.log (the tests print it):
#   - crun refuses hybrid cgroups (v1 controllers with a v2 mount beside them): runc, as Docker uses, instead
#   - Podman asks for RLIMIT_NOFILE/NPROC 1048576 per container, above what conmon may set without
#     CAP_SYS_RESOURCE (this machine's sandbox has none: setrlimit fails with EPERM): containers.conf's
#     default_ulimits are conmon's own limits, read from a probe container
#   - no systemd: cgroupfs and a file for events
#   - rootless, a /dev/net/tun the user cannot open (slirp4netns needs it): the containers get no network
#     (DIR/run-args says --network none to the tests)
# DIR afterwards: socket (the DOCKER_HOST value), mode, user (rootless: uid:gid), home (the relay's HOME),
# run-args (extra `docker run` arguments), service.log.
set -euo pipefail

command=${1:?usage: podman_service.sh start|stop DIR [rootful|rootless]}
dir=${2:?usage: podman_service.sh start|stop DIR [rootful|rootless]}
dir=$(realpath -m -- "$dir") # absolute: the rootless check walks the folders above it
mode=${3:-$(cat "$dir/mode" 2>/dev/null || echo rootful)}
user=maka-podman

[ "${MAKA_EVAL_E2E:-}" = 1 ] || { echo "podman: MAKA_EVAL_E2E is not 1, nothing to do"; exit 0; }

# alive PID, stop_pid PID
source "$(dirname "$0")/service_lib.sh"
source "$(dirname "$0")/../../scripts/storage.sh" # choose_storage_driver

# as_owner CMD...: as the service's owner (root, or the rootless user with its runtime directory).
as_owner() {
  if [ "$mode" = rootless ]; then
    setpriv --reuid "$user" --regid "$user" --init-groups --reset-env \
      env HOME="$dir/home" XDG_RUNTIME_DIR="$dir/xdg" CONTAINERS_CONF="$dir/containers.conf" PATH=/usr/bin:/bin "$@"
  else
    env CONTAINERS_CONF="$dir/containers.conf" "$@"
  fi
}
pod() {
  as_owner podman --root "$dir/root" --runroot "$dir/run" --tmpdir "$dir/tmp" --storage-driver "$driver" "$@"
}

# launch: the service in the background; waits until it answers on its socket.
# Started as a command of its own in the background (not a function), so that its pid is podman's.
launch() {
  local service=(podman --root "$dir/root" --runroot "$dir/run" --tmpdir "$dir/tmp" --storage-driver "$driver"
    system service --time 0 "unix://$dir/podman.sock")
  if [ "$mode" = rootless ]; then
    setpriv --reuid "$user" --regid "$user" --init-groups --reset-env env HOME="$dir/home" \
      XDG_RUNTIME_DIR="$dir/xdg" CONTAINERS_CONF="$dir/containers.conf" PATH=/usr/bin:/bin "${service[@]}" \
      >>"$dir/podman.log" 2>&1 &
  else
    CONTAINERS_CONF="$dir/containers.conf" "${service[@]}" >>"$dir/podman.log" 2>&1 &
  fi
  echo $! >"$dir/service.pid"
  for _ in $(seq 1 120); do
    if docker -H "unix://$dir/podman.sock" version >/dev/null 2>&1; then return 0; fi
    alive "$(cat "$dir/service.pid")" || break
    sleep 0.25
  done
  echo "podman: the service did not answer; its log:" >&2
  tail -20 "$dir/podman.log" >&2
  stop_service
  skip "the Podman service did not come up on this machine: $(grep -v '^\s*$' "$dir/podman.log" | tail -1)"
}

stop_service() {
  if [ "$mode" = rootless ]; then
    # Rootless podman re-executes itself inside its user namespace (the service is a child of the pid we
    # started) and keeps a pause process there: every process of the tests' own user goes.
    pkill -TERM -u "$user" 2>/dev/null || true
    for _ in $(seq 1 80); do
      ps -u "$user" -o stat= | grep -qv '^Z' || return 0 # a zombie is gone (PID 1 may never reap it)
      sleep 0.25
    done
    pkill -KILL -u "$user" 2>/dev/null || true
    return 0
  fi
  stop_pid "$(cat "$dir/service.pid" 2>/dev/null || true)"
}

skip() {
  echo "$1" >"$dir/skip"
  echo "podman ($mode): skipped: $1"
  exit 0
}

note() { echo "$1" | tee -a "$dir/service.log"; }

case "$command" in
start)
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "$mode" >"$dir/mode"
  command -v podman >/dev/null || skip "podman is not installed (Debian: apt-get install podman)"
  runtime=crun
  if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ] && [ -d /sys/fs/cgroup/unified ]; then
    command -v runc >/dev/null || skip "hybrid cgroups, which crun refuses, and no runc"
    runtime=runc
    note "podman ($mode): hybrid cgroups (v1 controllers, a v2 mount beside them), which crun refuses: runc"
  fi
  if [ "$mode" = rootless ]; then
    command -v newuidmap >/dev/null || skip "rootless needs newuidmap and newgidmap (Debian: uidmap)"
    id "$user" >/dev/null 2>&1 || useradd --system --create-home --home-dir "/var/lib/$user" \
      --shell /usr/sbin/nologin "$user"
    if ! grep -q "^$user:" /etc/subuid; then usermod --add-subuids 200000-265535 "$user"; fi
    if ! grep -q "^$user:" /etc/subgid; then usermod --add-subgids 200000-265535 "$user"; fi
    echo "$(id -u "$user"):$(id -g "$user")" >"$dir/user"
    # The tests' relay runs as that user from the build folder this directory is in: every directory above
    # it must let others in (a folder under /root, mode 0700, does not).
    path=
    IFS=/ read -ra parts <<<"${dir#/}"
    for part in "${parts[@]}"; do
      path="$path/$part"
      [ "$path" != "$dir" ] || break
      setpriv --reuid "$user" --regid "$user" --init-groups test -x "$path" 2>/dev/null ||
        skip "$user, whom the rootless tests' relay runs as, may not enter $path (mode $(stat -c '%a, owner %U' "$path")), above the build folder: build where other users may enter (not under /root)"
    done
    mkdir -p "$dir/home" "$dir/xdg"
    chmod 0700 "$dir/xdg"
    chown -R "$user:$user" "$dir"
    chmod 0755 "$dir"
    setpriv --reuid "$user" --regid "$user" --init-groups unshare --user --map-root-user true 2>/dev/null ||
      skip "the kernel does not let $user make a user namespace (user.max_user_namespaces, or a sandbox)"
    # Rootless overlay needs fuse-overlayfs or a kernel that allows it (5.13+); vfs works everywhere,
    # which is what a user without either gets.
    driver=vfs
    if ! setpriv --reuid "$user" --regid "$user" --init-groups sh -c ': < /dev/net/tun' 2>/dev/null; then
      echo "--network none" >"$dir/run-args"
      note "podman ($mode): $user cannot open /dev/net/tun ($(stat -c '%a %U' /dev/net/tun 2>/dev/null || echo missing)), which slirp4netns needs: containers without a network"
    fi
  else
    echo "$(id -u):$(id -g)" >"$dir/user"
    mkdir -p "$dir/home"
    # overlay where the kernel mounts one in this directory (never through fuse-overlayfs, whose /dev/fuse a
    # CI container lacks), else vfs.
    choose_storage_driver "$dir/root" overlay
    driver=$STORAGE_DRIVER
    note "podman ($mode): storage $driver: $STORAGE_WHY"
  fi
  touch "$dir/run-args"
  # A first start with small limits for every container, to read the limits conmon (whose children the
  # containers are) runs with: Podman's own choice for them (1048576) is more than it may set here.
  {
    printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n'
    printf '[engine]\nruntime = "%s"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n' "$runtime"
  } >"$dir/containers.conf"
  chmod 0644 "$dir/containers.conf"
  launch
  echo "unix://$dir/podman.sock" >"$dir/socket"
  echo "$driver" >"$dir/driver"
  # The test images, from the main engine.
  docker save maka-eval-test-busybox:test maka-eval-helper:test >"$dir/images.tar"
  chmod 0644 "$dir/images.tar"
  pod load -i "$dir/images.tar" >>"$dir/podman.log" 2>&1
  rm -f "$dir/images.tar"
  # shellcheck disable=SC2046 # run-args is words
  docker -H "unix://$dir/podman.sock" run -d --name maka-limits-probe $(cat "$dir/run-args") \
    maka-eval-test-busybox:test sleep 600 >>"$dir/podman.log" 2>&1
  monitor=$(pgrep -f "conmon .*$dir/" | head -1 || true)
  [ -n "$monitor" ] || { tail -5 "$dir/podman.log" >&2; skip "no container starts on this Podman (its log is above)"; }
  nofile=$(awk '/^Max open files/ {print $5}' "/proc/$monitor/limits")
  nproc=$(awk '/^Max processes/ {print $4}' "/proc/$monitor/limits")
  docker -H "unix://$dir/podman.sock" rm -f maka-limits-probe >/dev/null 2>&1
  stop_service
  sed -i "s/^default_ulimits = .*/default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]/" \
    "$dir/containers.conf"
  note "podman ($mode): containers get conmon's own limits (nofile $nofile, nproc $nproc): Podman's 1048576 fails setrlimit here"
  launch
  note "podman ($mode): $(podman --version), service pid $(cat "$dir/service.pid"), storage $driver, runtime $runtime, socket $(cat "$dir/socket")"
  ;;
stop)
  [ -d "$dir" ] || exit 0
  driver=$(cat "$dir/driver" 2>/dev/null || echo vfs)
  if [ -S "$dir/podman.sock" ]; then
    docker -H "unix://$dir/podman.sock" ps -aq 2>/dev/null | xargs -r docker -H "unix://$dir/podman.sock" rm -f >/dev/null 2>&1 || true
  fi
  stop_service
  # What outlived the service (a container whose removal failed): its conmon and the container's init, which
  # takes the rest of its PID namespace with it.
  for monitor in $(pgrep -f "conmon .*$dir/" || true); do
    pkill -KILL -P "$monitor" 2>/dev/null || true
    kill -KILL "$monitor" 2>/dev/null || true
  done
  if [ -d "$dir/root" ]; then
    # Storage the rootless user's subordinate ids own is removed inside its namespace; overlay mounts go too.
    pod system reset --force >/dev/null 2>&1 || true
    if [ "$mode" = rootless ]; then
      pod unshare rm -rf "$dir/root" "$dir/run" "$dir/tmp" >/dev/null 2>&1 || true
    fi
  fi
  # The commands above started the rootless user's pause process again.
  [ "$mode" != rootless ] || stop_service
  rm -rf "$dir"
  ;;
*)
  echo "usage: podman_service.sh start|stop DIR [rootful|rootless]" >&2
  exit 2
  ;;
esac
