#!/usr/bin/env bash
# Builds what users install, into dist/: the Debian package (cpack, maka-eval-relay_<version>_amd64.deb)
# and the adapter's wheel carrying the relay and the static helper (maka_eval_relay-<version>-py3-none-
# linux_x86_64.whl), offline, with Debian's python3-build, -setuptools and -wheel.
# Usage (as root on Debian 12): bash scripts/package.sh [--check] [--from BUILD_DIR] [--dist DIR]
#   --from: package that build (already built; nothing is installed or built), --dist: where to (default dist/)
#     — how tests/docs/commands_test.py gets the packages whose installs it runs the docs' commands after
#   --check then verifies both installs in clean environments:
#     .deb: `dpkg -i` in a minimal Debian 12 container (debootstrap'd once, see clean_image), then a trial
#           with the installed `maka-eval-relay run` (the helper found where the package put it);
#     wheel: `pip install` into a fresh venv with nothing else, then one adapter trial through the stand-in
#           Harbor environment on the real engine, importing the installed adapter and its bundled binaries.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
check=
build=
dist=$MAKA_ROOT/dist
while (($# > 0)); do
  case $1 in
  --check) check=1 ;;
  --from) build=${2:?--from needs a build folder}; shift ;;
  --dist) dist=${2:?--dist needs a folder}; shift ;;
  *) echo "package.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$build" ]; then
  # Debian's own Python, which the python3-* packages below are for (a PATH python3 may be another).
  ensure_packages "${BUILD_PACKAGES[@]}" "${PACKAGING_PACKAGES[@]}"
  build_preset ci maka-eval-relay maka-eval-helper maka-eval-test-orchestrator >/dev/null
  build=$MAKA_ROOT/build/ci
fi
mkdir -p "$dist"
rm -f "$dist"/maka-eval-relay_*.deb "$dist"/maka_eval_relay-*.whl

say "Debian package"
(cd "$build" && cpack -G DEB -B "$dist/cpack" >/dev/null)
mv "$dist"/cpack/*.deb "$dist/"
rm -rf "$dist/cpack"

say "wheel"
version=$("$build/relay/maka-eval-relay" --version | awk '{print $2}')
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp -r "$MAKA_ROOT/relay/harbor/maka_eval_relay" "$stage/"
rm -rf "$stage/maka_eval_relay/__pycache__"
mkdir "$stage/maka_eval_relay/bin"
install -m 0755 "$build/relay/maka-eval-relay" "$build/in_container/maka-eval-helper" \
  "$stage/maka_eval_relay/bin/"
strip "$stage/maka_eval_relay/bin/maka-eval-relay"
cp "$MAKA_ROOT/relay/harbor/packaging/setup.py" "$MAKA_ROOT/README.md" "$MAKA_ROOT/relay/harbor/relay_agent.py" "$stage/"
sed "s/@VERSION@/$version/" "$MAKA_ROOT/relay/harbor/packaging/pyproject.toml" >"$stage/pyproject.toml"
(cd "$stage" && /usr/bin/python3 -m build --wheel --no-isolation --outdir "$dist" >/dev/null)
ls -l "$dist"

[ -n "$check" ] || exit 0
source "$MAKA_ROOT/scripts/engine.sh"
trap 'engine_down; rm -rf "$stage"' EXIT
engine_up
build_test_images "$build" >/dev/null

say "check: the .deb in a clean Debian 12 container"
image=$(clean_image)
docker run --rm --init -v "$dist:/dist:ro" "$image" sh -c '
  set -e
  dpkg -i /dist/*.deb >/dev/null
  out=$(maka-eval-relay run --json -- sh -c "echo hello; /usr/lib/maka-eval/maka-eval-helper frame \"{\\\"ok\\\":1}\"")
  echo "$out"
  case $out in *"\"stdout\":\"{\\\"ok\\\":1}\""*"\"exit\":0"*) ;; *) echo "unexpected result" >&2; exit 1 ;; esac
  test -f /usr/share/maka-eval/harbor/maka_eval_relay/agent.py
  test -f /usr/share/maka-eval/harbor/relay_agent.py
  test -f /usr/share/maka-eval/schema/session-run.schema.json'
echo "deb: installed and ran a trial"

say "check: the wheel in a fresh venv"
venv=$stage/venv
/usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --no-index "$dist"/*.whl
MAKA_EVAL_E2E=1 MAKA_EVAL_TEST_INSTALLED=1 MAKA_EVAL_TEST_ORCHESTRATOR="$build/tests/maka-eval-test-orchestrator" \
  "$venv/bin/python" "$MAKA_ROOT/tests/relay/harbor/test_adapter.py" e2e \
  HarborTest.test_happy_path_frame_artifacts_and_no_secret_left
echo "wheel: installed and ran an adapter trial"
