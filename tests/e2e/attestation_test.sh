#!/usr/bin/env bash
# Signed results as a result store and an auditor use them (docs/security.md): keygen, a signed trial, verify
# with our command and with two verifiers we did not write (OpenSSL's CLI over the PAE bytes; npm's
# @sigstore/core's DSSE encoding with Node's Ed25519), every tampering refused with its reason, and the
# private key nowhere it must not be.
#   attestation_test.sh RELAY BUILD_DIR CASE      CASE: local | docker | openssl | sigstore
#   attestation_test.sh RELAY BUILD_DIR envelope PUB ENVELOPE
#       an envelope made elsewhere (the real runners' trials): ours, openssl and @sigstore/core each verify it
# Exit 0 passed, 1 failed (saying what), 77 skipped (saying why). MAKA_EVAL_TEST_HELPER: the helper that goes
# into the container (default: the relay's own).
set -uo pipefail
relay=${1:?usage: attestation_test.sh RELAY BUILD_DIR CASE}
build=${2:?usage: attestation_test.sh RELAY BUILD_DIR CASE}
case_name=${3:?usage: attestation_test.sh RELAY BUILD_DIR CASE}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/case_lib.sh"

# refused WHAT PATTERN ARGS...: verify must exit non-zero and say PATTERN.
refused() {
  local what=$1 pattern=$2
  shift 2
  if "$relay" verify "$@" >"$work/out" 2>"$work/err"; then
    fail "$what: verify accepted it"
  fi
  grep -q -- "$pattern" "$work/err" || fail "$what: verify said $(cat "$work/err"), not /$pattern/"
}

# The PAE bytes and the raw signature of an envelope, for the independent verifiers (Python's json and
# base64 only: the encoding is the DSSE specification's, written out here a second time on purpose).
split_envelope() {
  python3 - "$1" "$work/pae.bin" "$work/sig.bin" <<'EOF'
import base64, json, sys
envelope = json.load(open(sys.argv[1]))
body = base64.b64decode(envelope["payload"])
kind = envelope["payloadType"].encode()
open(sys.argv[2], "wb").write(b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(body), body))
open(sys.argv[3], "wb").write(base64.b64decode(envelope["signatures"][0]["sig"]))
EOF
}

# A signed local trial: the envelope in $work/att.json, the artifacts' directory in $artifacts.
signed_local_trial() {
  "$relay" keygen --out "$work/k" >"$work/keygen" || fail "keygen exited $?"
  export SIGN_CANARY=attestation-canary-$$
  "$relay" run --quiet --json --sign-key "$work/k.key" --attestation "$work/att.json" --credential SIGN_CANARY \
    -e MODE=test -- sh -c 'printf "%s\n" "MAKA-EVAL-RESULT-V1 ignored"; echo "$SIGN_CANARY"' >"$work/run.json" ||
    fail "the signed run exited $?: $(cat "$work/run.json")"
  artifacts=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["artifacts"])' "$work/run.json")
  [ -d "$artifacts" ] || fail "no artifacts directory in $(cat "$work/run.json")"
}

# sigstore_modules: @sigstore/core in the build folder (never the tree), installed once from the registry
# npm is configured with; skips when it cannot be had.
sigstore_modules() {
  command -v node >/dev/null && command -v npm >/dev/null || skip "no node or npm (Debian: apt-get install nodejs npm)"
  modules="$build/npm-sigstore"
  if [ ! -d "$modules/node_modules/@sigstore/core" ]; then
    mkdir -p "$modules"
    npm install --prefix "$modules" --no-audit --no-fund --no-save @sigstore/core@4 >"$work/npm.log" 2>&1 ||
      skip "npm could not install @sigstore/core: $(grep -m3 -iE 'err|fail|cert|timed out' "$work/npm.log" | tr '\n' ' ')"
  fi
}

# openssl_verifies PUB ENVELOPE: OpenSSL's CLI over the PAE bytes.
openssl_verifies() {
  split_envelope "$2"
  openssl pkeyutl -verify -pubin -inkey "$1" -rawin -in "$work/pae.bin" -sigfile "$work/sig.bin" >"$work/out" 2>&1 &&
    grep -q "Signature Verified Successfully" "$work/out"
}

# sigstore_verifies PUB ENVELOPE: @sigstore/core's DSSE encoding and Node's Ed25519.
sigstore_verifies() {
  node "$here/../relay/attest/sigstore_verify.js" "$modules/node_modules" "$1" "$2" >"$work/out" &&
    grep -q "verified https://in-toto.io/Statement/v1" "$work/out"
}

case "$case_name" in
envelope)
  pub=${4:?usage: attestation_test.sh RELAY BUILD_DIR envelope PUB ENVELOPE}
  envelope=${5:?usage: attestation_test.sh RELAY BUILD_DIR envelope PUB ENVELOPE}
  "$relay" verify --key "$pub" "$envelope" >"$work/out" || fail "verify: $(cat "$work/out")"
  command -v openssl >/dev/null || skip "no openssl command (Debian: apt-get install openssl)"
  openssl_verifies "$pub" "$envelope" || fail "openssl refused it: $(cat "$work/out")"
  sigstore_modules
  sigstore_verifies "$pub" "$envelope" || fail "@sigstore/core refused it: $(cat "$work/out")"
  ;;
local)
  signed_local_trial
  key_id=$(awk '/^key id/ {print $3}' "$work/keygen")
  [ "$(stat -c %a "$work/k.key")" = 600 ] || fail "the private key is not 0600"
  [ "$(stat -c %a "$work/att.json")" = 600 ] || fail "the attestation is not 0600"
  [ "$(wc -l <"$work/att.json")" = 1 ] || fail "the envelope is not one line"
  grep -q "\"keyid\":\"$key_id\"" "$work/att.json" || fail "the envelope does not name key $key_id"
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["attestation"]; b=json.load(open(sys.argv[2])); sys.exit(a!=b)' \
    "$work/run.json" "$work/att.json" || fail "run --json's attestation is not the file's"
  "$relay" verify --key "$work/k.pub" --artifacts "$artifacts" "$work/att.json" >"$work/out" ||
    fail "verify refused a good trial: $(cat "$work/out")"
  grep -q "ended completed" "$work/out" || fail "verify's summary: $(cat "$work/out")"
  grep -q "4 files match" "$work/out" || fail "verify's summary: $(cat "$work/out")"
  "$relay" verify --json --key "$work/k.pub" "$work/att.json" >"$work/statement.json" || fail "verify --json"
  python3 - "$work/statement.json" <<'EOF' || fail "the statement: $(cat "$work/statement.json")"
import json, sys
s = json.load(open(sys.argv[1]))
p = s["predicate"]
assert s["predicateType"] == "urn:maka-eval:trial-result:v1"
assert p["subject"]["credentials"] == ["SIGN_CANARY"], p["subject"]
assert "MODE" in p["subject"]["environment"], p["subject"]
assert p["environment"]["backend"] == "local" and len(p["helper"]["sha256"]) == 64
assert "token" not in p["executed"]
EOF
  # The secret is nowhere in what was signed or written.
  ! grep -rq "attestation-canary" "$work/att.json" "$work/statement.json" || fail "the credential is in the signed result"
  # Tampering, each refused with its reason.
  cp -a "$artifacts" "$work/changed"
  printf x >>"$work/changed/maka-subject.stdout.txt"
  refused "a changed artifact" "maka-subject.stdout.txt: its SHA-256 is" --key "$work/k.pub" --artifacts "$work/changed" "$work/att.json"
  rm "$work/changed/maka-subject.stdout.txt"
  refused "a missing artifact" "signed, but not a file" --key "$work/k.pub" --artifacts "$work/changed" "$work/att.json"
  cp -a "$artifacts" "$work/extra" && touch "$work/extra/planted"
  refused "an extra artifact" "planted: in" --key "$work/k.pub" --artifacts "$work/extra" "$work/att.json"
  python3 - "$work/att.json" "$work/payload.json" "$work/sig.json" <<'EOF'
import base64, json, sys
e = json.load(open(sys.argv[1]))
body = bytearray(base64.b64decode(e["payload"]))
body[body.index(b"completed")] = ord("C")
json.dump(dict(e, payload=base64.b64encode(bytes(body)).decode()), open(sys.argv[2], "w"))
sig = bytearray(base64.b64decode(e["signatures"][0]["sig"]))
sig[0] ^= 1
json.dump(dict(e, signatures=[dict(e["signatures"][0], sig=base64.b64encode(bytes(sig)).decode())]), open(sys.argv[3], "w"))
EOF
  refused "a changed payload byte" "does not verify" --key "$work/k.pub" "$work/payload.json"
  refused "a changed signature byte" "does not verify" --key "$work/k.pub" "$work/sig.json"
  head -c 200 "$work/att.json" >"$work/short.json"
  refused "a truncated envelope" "not a DSSE envelope" --key "$work/k.pub" "$work/short.json"
  "$relay" keygen --out "$work/other" >/dev/null
  refused "the wrong key" "not by the key given" --key "$work/other.pub" "$work/att.json"
  # A key file others may read is refused before any trial runs.
  chmod 0644 "$work/k.key"
  "$relay" run --sign-key "$work/k.key" --attestation "$work/x.json" -- true >/dev/null 2>"$work/err" &&
    fail "a 0644 key was accepted"
  grep -q "chmod 600" "$work/err" || fail "the 0644 key's error: $(cat "$work/err")"
  [ ! -e "$work/x.json" ] || fail "an attestation was written with a refused key"
  ;;
docker)
  fresh_container maka-attest
  "$relay" keygen --out "$work/k" >/dev/null || fail "keygen"
  key_body=$(sed -n 2p "$work/k.key") # the base64 of the private key
  # A subject that runs long enough for its relay's argv and environment to be read meanwhile.
  MAKA_EVAL_SIGN_KEY_FILE="$work/k.key" "$relay" run --quiet --json --attestation "$work/att.json" \
    --env "docker:$container" "${helper_args[@]}" -- sh -c 'touch /tmp/started; sleep 2; echo done' \
    >"$work/run.json" 2>"$work/relay.log" &
  relay_pid=$!
  for _ in $(seq 300); do docker exec "$container" test -e /tmp/started && break; sleep 0.05; done
  grep -qa -- "$key_body" "/proc/$relay_pid/cmdline" "/proc/$relay_pid/environ" &&
    fail "the private key is in the relay's argv or environment"
  wait "$relay_pid" || fail "the signed docker run exited $?: $(cat "$work/relay.log")"
  "$relay" verify --key "$work/k.pub" "$work/att.json" >"$work/out" || fail "verify: $(cat "$work/out")"
  openssl_verifies "$work/k.pub" "$work/att.json" || fail "openssl refused the docker trial's envelope: $(cat "$work/out")"
  if command -v node >/dev/null && command -v npm >/dev/null; then
    sigstore_modules
    sigstore_verifies "$work/k.pub" "$work/att.json" || fail "@sigstore/core refused it: $(cat "$work/out")"
  fi
  id=$(docker inspect -f '{{.Id}}' "$container")
  image=$(docker inspect -f '{{.Image}}' "$container")
  "$relay" verify --json --key "$work/k.pub" "$work/att.json" >"$work/statement.json"
  python3 - "$work/statement.json" "$id" "$image" <<'EOF' || fail "the docker facts: $(cat "$work/statement.json")"
import json, sys
e = json.load(open(sys.argv[1]))["predicate"]["environment"]
assert e["backend"] == "docker" and e["containerId"] == sys.argv[2] and e["imageId"] == sys.argv[3], e
assert e["engine"], e
EOF
  # The artifacts as the container holds them verify too.
  docker cp "$container:/logs/artifacts" "$work/artifacts" >/dev/null || fail "no artifacts in the container"
  "$relay" verify --key "$work/k.pub" --artifacts "$work/artifacts" "$work/att.json" >"$work/out" ||
    fail "the container's artifacts: $(cat "$work/out")"
  # The private key never entered the container, a log or an artifact.
  docker export "$container" | grep -qa -- "$key_body" && fail "the private key is in the container"
  grep -rqa -- "$key_body" "$work/artifacts" "$work/relay.log" "$work/run.json" "$work/att.json" &&
    fail "the private key is in an artifact, the log or the output"
  ;;
openssl)
  command -v openssl >/dev/null || skip "no openssl command (Debian: apt-get install openssl)"
  signed_local_trial
  openssl_verifies "$work/k.pub" "$work/att.json" || fail "openssl refused our envelope: $(cat "$work/out")"
  printf x >>"$work/pae.bin"
  openssl pkeyutl -verify -pubin -inkey "$work/k.pub" -rawin -in "$work/pae.bin" -sigfile "$work/sig.bin" \
    >/dev/null 2>&1 && fail "openssl accepted a changed payload (the check cannot fail)"
  ;;
sigstore)
  sigstore_modules
  signed_local_trial
  sigstore_verifies "$work/k.pub" "$work/att.json" || fail "@sigstore/core refused our envelope: $(cat "$work/out")"
  "$relay" keygen --out "$work/other" >/dev/null
  sigstore_verifies "$work/other.pub" "$work/att.json" &&
    fail "@sigstore/core accepted another key's envelope (the check cannot fail)"
  ;;
*)
  echo "unknown case $case_name" >&2
  exit 2
  ;;
esac
echo "passed: $case_name"
