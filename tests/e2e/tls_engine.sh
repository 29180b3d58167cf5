#!/usr/bin/env bash
# A second Docker engine of the tests' own, reachable only over mutual TLS, for tests/e2e/docker_tls_test.cpp.
#   tls_engine.sh start DIR   certificates made with the `openssl` command, then dockerd --tlsverify on
#                             127.0.0.1:PORT and 127.0.0.2:PORT (the second address is not in the server's
#                             certificate: the wrong-host case), its own data root, exec root and unix socket
#                             (DIR/docker.sock, for the tests' set-up through the CLI), the test images loaded
#                             from the main engine; and an `openssl s_server` presenting an expired certificate
#                             (a handshake fails before any HTTP, so it stands in for an engine there)
#   tls_engine.sh stop DIR    stops both and removes the engine's data and its bridge
#   tls_engine.sh kill DIR    SIGKILL to dockerd (an engine that went down; its containerd goes with it): the
#                             shims and the containers keep running, as they do when a real engine crashes. It
#                             stays down (a dockerd started again would wait on a containerd that cannot
#                             reclaim them); stop removes what is left
#   tls_engine.sh status DIR  exit 0 when the engine answers
# MAKA_EVAL_ENGINE_BRIDGE / MAKA_EVAL_ENGINE_BRIDGE_ADDRESS name another bridge, for a second engine of this
# kind beside the first (the engine-fault tests' own, which they kill).
# ctest runs these as the FIXTURES_SETUP/FIXTURES_CLEANUP of the TLS tests. Without MAKA_EVAL_E2E=1 (no engine
# prepared for this run) it does nothing and the tests report themselves skipped.
#
# DIR afterwards: port, expired-port; client certificate directories (each a DOCKER_CERT_PATH):
#   good/ (ca.pem cert.pem key.pem)   other-ca/ (a CA that did not sign the engine's certificate)
#   expired-client/ (a client certificate that expired)   no-client/ (ca.pem only)
#   mismatched-key/ (key.pem is not cert.pem's key)   encrypted-key/ (key.pem needs a passphrase)
set -euo pipefail

command=${1:?usage: tls_engine.sh start|stop DIR}
dir=${2:?usage: tls_engine.sh start|stop DIR}

[ "${MAKA_EVAL_E2E:-}" = 1 ] || { echo "tls engine: MAKA_EVAL_E2E is not 1, nothing to do"; exit 0; }

# Its own bridge: the engines share this network namespace, and a second dockerd given --bridge none deletes
# the first one's docker0. Its address is from the benchmarking range (198.18.0.0/15), used by nothing real.
# The bridge is remembered in DIR at start, for the commands that follow (kill, revive, stop).
bridge=${MAKA_EVAL_ENGINE_BRIDGE:-$(cat "$dir/bridge" 2>/dev/null || echo maka-tls0)}
bridge_address=${MAKA_EVAL_ENGINE_BRIDGE_ADDRESS:-198.18.213.1/24}

# alive PID, stop_pid PID
source "$(dirname "$0")/service_lib.sh"
# choose_storage_driver: overlay2 where its data root can hold an overlay mount, else vfs (never fuse-overlayfs)
source "$(dirname "$0")/../../scripts/storage.sh"

# launch_dockerd: this engine's dockerd in the background (port from DIR/port), and wait until it answers on its
# unix socket; up=1 when it did.
local_docker() { docker -H "unix://$dir/docker.sock" "$@"; }
launch_dockerd() {
  local port
  port=$(cat "$dir/port")
  choose_storage_driver "$dir/data" overlay2
  echo "tls engine: storage driver $STORAGE_DRIVER: $STORAGE_WHY" | tee -a "$dir/dockerd.log"
  dockerd --storage-driver "$STORAGE_DRIVER" --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/dockerd.pid" \
    --host "unix://$dir/docker.sock" --host "tcp://127.0.0.1:$port" --host "tcp://127.0.0.2:$port" \
    --tlsverify --tlscacert "$dir/pki/ca.pem" --tlscert "$dir/pki/server.pem" --tlskey "$dir/pki/server-key.pem" \
    --bridge "$bridge" --iptables=false --ip6tables=false >>"$dir/dockerd.log" 2>&1 &
  up=0
  for _ in $(seq 1 120); do
    if local_docker version >/dev/null 2>&1; then up=1; break; fi
    sleep 0.25
  done
}

# kill_orphans: the containers of this engine that outlived its dockerd and containerd (a test killed it):
# every process in the cgroup of a container whose shim names DIR, then the shim.
kill_orphans() {
  local shim id proc
  for shim in $(pgrep -f "containerd-shim.*-address $dir/" || true); do
    id=$(tr '\0' '\n' <"/proc/$shim/cmdline" 2>/dev/null | sed -n '/^-id$/{n;p}')
    if [ -n "$id" ]; then
      for proc in /proc/[0-9]*; do
        # A process that ends between the look and the kill is what was wanted: never an error (set -e).
        if grep -qF "$id" "$proc/cgroup" 2>/dev/null; then kill -KILL "${proc#/proc/}" 2>/dev/null || true; fi
      done
    fi
    kill -KILL "$shim" 2>/dev/null || true
  done
}

if [ "$command" = kill ]; then
  pid=$(cat "$dir/dockerd.pid")
  kill -KILL "$pid"
  for _ in $(seq 1 80); do
    alive "$pid" || { echo "tls engine: dockerd killed"; exit 0; }
    sleep 0.05
  done
  echo "tls engine: dockerd $pid did not die" >&2
  exit 1
fi
if [ "$command" = status ]; then
  local_docker version >/dev/null 2>&1 # 0: the engine answers
  exit
fi
if [ "$command" = stop ]; then
  kill_orphans
  # dockerd's own containerd is waited for too: it may still write under the data root after dockerd exits.
  containerd=$(cat "$dir/exec/containerd/containerd.pid" 2>/dev/null || true)
  stop_pid "$(cat "$dir/s_server.pid" 2>/dev/null || true)"
  stop_pid "$(cat "$dir/dockerd.pid" 2>/dev/null || true)"
  stop_pid "$containerd"
  # The data root holds the loaded images and the tests' containers' layers. A mount dockerd leaves behind
  # (its private bind of the data root, a network namespace) is undone first, deepest first.
  awk -v prefix="$dir/" 'index($5, prefix) == 1 {print $5}' /proc/self/mountinfo | sort -r |
    while read -r mount; do umount -l "$mount" 2>/dev/null || true; done
  if ! rm -rf "$dir/data" "$dir/exec"; then
    echo "tls engine: cannot remove its data; mounts left under $dir:" >&2
    grep -F " $dir/" /proc/self/mountinfo >&2 || true
    exit 1
  fi
  ip link delete "$bridge" 2>/dev/null || true
  echo "tls engine: stopped"
  exit 0
fi
[ "$command" = start ] || { echo "usage: tls_engine.sh start|stop DIR" >&2; exit 2; }

"$0" stop "$dir" >/dev/null 2>&1 || true
rm -rf "$dir"
mkdir -p "$dir"/{pki,good,other-ca,expired-client,no-client,mismatched-key,encrypted-key}
cd "$dir/pki"

# key NAME: a P-256 key (quick to make, and what a modern engine is given).
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1-key.pem" 2>/dev/null; }
ca() { # ca NAME: a self-signed CA
  key "$1"
  openssl req -x509 -new -key "$1-key.pem" -out "$1.pem" -days 2 -subj "/CN=maka-eval test $1" 2>/dev/null
}
# sign NAME CA DAYS EXTENSIONS: a certificate for NAME's key, signed by CA (DAYS -1: already expired).
sign() {
  key "$1"
  openssl req -new -key "$1-key.pem" -out "$1.csr" -subj "/CN=$1" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2-key.pem" -CAcreateserial -days "$3" \
    -extfile <(printf '%s\n' "$4") -out "$1.pem" 2>/dev/null
}
ca ca
ca other
sign server ca 2 $'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth'
sign expired-server ca -1 $'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth'
sign client ca 2 'extendedKeyUsage=clientAuth'
sign expired-client ca -1 'extendedKeyUsage=clientAuth'

cp ca.pem "$dir/good/ca.pem" && cp client.pem "$dir/good/cert.pem" && cp client-key.pem "$dir/good/key.pem"
cp other.pem "$dir/other-ca/ca.pem" && cp client.pem "$dir/other-ca/cert.pem" &&
  cp client-key.pem "$dir/other-ca/key.pem"
cp ca.pem "$dir/expired-client/ca.pem" && cp expired-client.pem "$dir/expired-client/cert.pem" &&
  cp expired-client-key.pem "$dir/expired-client/key.pem"
cp ca.pem "$dir/no-client/ca.pem"
cp ca.pem "$dir/mismatched-key/ca.pem" && cp client.pem "$dir/mismatched-key/cert.pem" &&
  cp expired-client-key.pem "$dir/mismatched-key/key.pem"
cp ca.pem "$dir/encrypted-key/ca.pem" && cp client.pem "$dir/encrypted-key/cert.pem" &&
  openssl pkey -in client-key.pem -aes256 -passout pass:secret -out "$dir/encrypted-key/key.pem"
chmod 0600 "$dir"/*/key.pem "$dir"/pki/*-key.pem

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port=$(free_port)
echo "$port" >"$dir/port"
echo "$bridge" >"$dir/bridge"

# Its own bridge and no iptables rules (the main engine owns those); its own containerd comes with its exec
# root.
ip link add "$bridge" type bridge
ip address add "$bridge_address" dev "$bridge"
ip link set "$bridge" up
launch_dockerd
if [ "$up" != 1 ]; then
  echo "tls engine: dockerd did not come up; its log:" >&2
  tail -30 "$dir/dockerd.log" >&2
  exit 1
fi
docker save maka-eval-test-busybox:test maka-eval-helper:test | local_docker load -q >/dev/null

expired_port=$(free_port)
echo "$expired_port" >"$dir/expired-port"
openssl s_server -quiet -accept "127.0.0.1:$expired_port" -cert "$dir/pki/expired-server.pem" \
  -key "$dir/pki/expired-server-key.pem" -www </dev/null >"$dir/s_server.log" 2>&1 &
echo $! >"$dir/s_server.pid"
for _ in $(seq 1 40); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$expired_port") 2>/dev/null; then break; fi
  sleep 0.25
done
echo "tls engine: dockerd --tlsverify on 127.0.0.1:$port (pid $(cat "$dir/dockerd.pid")), expired-certificate" \
  "server on 127.0.0.1:$expired_port"
