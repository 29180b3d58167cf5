# Docker engine for the end-to-end tests: sourced by scripts/test.sh and bench/run.sh.
#   engine_up    — use a running engine, or install Debian's docker.io and start dockerd (we are root)
#   engine_down  — stop dockerd only if engine_up started it
#   build_test_images BUILD_DIR — the FROM-scratch images the tests use (no registry is reachable)
# The dockerd started here is given its storage driver (scripts/storage.sh says why and how it is chosen),
# unless /etc/docker/daemon.json names one: the machine's own choice stands (dockerd refuses a flag that
# repeats the file).

source "$(dirname "${BASH_SOURCE[0]}")/storage.sh"

MAKA_ENGINE_STARTED=0
MAKA_DOCKERD_PID=

engine_answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

engine_up() {
  if engine_answers; then
    echo "docker engine: already running ($(docker version --format '{{.Server.Version}}'))"
    return 0
  fi
  ensure_packages docker.io busybox-static
  local log config=/etc/docker/daemon.json driver=() root
  log=$(mktemp /tmp/maka-dockerd-XXXXXX.log)
  if [ -f "$config" ] && grep -q '"storage-driver"' "$config"; then
    echo "docker engine: storage driver as $config says"
  else
    root=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("data-root", ""))' "$config" \
      2>/dev/null || true)
    choose_storage_driver "${root:-/var/lib/docker}" overlay2
    echo "docker engine: storage driver $STORAGE_DRIVER: $STORAGE_WHY"
    driver=(--storage-driver "$STORAGE_DRIVER")
  fi
  dockerd --host unix:///var/run/docker.sock "${driver[@]}" >"$log" 2>&1 &
  MAKA_DOCKERD_PID=$!
  MAKA_ENGINE_STARTED=1
  for _ in $(seq 1 60); do
    if engine_answers; then
      echo "docker engine: started dockerd (pid $MAKA_DOCKERD_PID, log $log)"
      return 0
    fi
    sleep 0.5
  done
  echo "docker engine: dockerd did not come up; its log:" >&2
  tail -30 "$log" >&2
  return 1
}

engine_down() {
  if [ "$MAKA_ENGINE_STARTED" = 1 ] && [ -n "$MAKA_DOCKERD_PID" ]; then
    kill -TERM "$MAKA_DOCKERD_PID" 2>/dev/null || true
    for _ in $(seq 1 40); do
      kill -0 "$MAKA_DOCKERD_PID" 2>/dev/null || break
      sleep 0.5
    done
    kill -KILL "$MAKA_DOCKERD_PID" 2>/dev/null || true
    echo "docker engine: stopped the dockerd this run started"
  fi
}

# build_test_images BUILD_DIR: maka-eval-helper:test (the helper alone) and maka-eval-test-busybox:test.
build_test_images() {
  local build=$1 context
  ensure_packages busybox-static
  context=$(mktemp -d)
  cp "$build/in_container/maka-eval-helper" "$context/maka-eval-helper"
  cp /bin/busybox "$context/busybox"
  docker build -q -t maka-eval-helper:test -f "$MAKA_ROOT/docker/helper/Dockerfile" "$context" >/dev/null &&
    docker build -q -t maka-eval-test-busybox:test -f "$MAKA_ROOT/docker/test-busybox/Dockerfile" "$context" >/dev/null
  local status=$?
  rm -rf "$context"
  return $status
}
