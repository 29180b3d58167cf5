# Shell functions shared by the tests' own engines (tls_engine.sh, podman_service.sh), which set $dir (the
# engine's directory) before sourcing this.

# alive PID: it exists and is not a zombie (on a machine whose PID 1 never reaps, an exited child of a
# process that is gone stays a zombie for ever).
alive() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
  [ -n "$state" ] && [ "$state" != Z ]
}

# stop_pid PID: TERM, wait up to 20 s, then KILL; only a process of this engine, whose command line names
# $dir (a stale pid file of an earlier run may name a pid reused since).
stop_pid() {
  [ -n "$1" ] || return 0
  tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | grep -qF "$dir/" || return 0
  kill -TERM "$1" 2>/dev/null || return 0
  for _ in $(seq 1 80); do
    alive "$1" || return 0
    sleep 0.25
  done
  kill -KILL "$1" 2>/dev/null || true
}
