# Shared by scripts/*.sh: install missing Debian packages, configure and build a preset, logging.
# Sourced, not run. Everything here must work as root on a fresh Debian 12 machine.

MAKA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export DEBIAN_FRONTEND=noninteractive

say() { printf '\n== %s\n' "$*" >&2; }

# ensure_packages PKG... — installs only what is missing; `apt-get update` only when something is.
ensure_packages() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    say "installing: ${missing[*]}"
    if [ "$(id -u)" != 0 ]; then
      echo "missing packages (${missing[*]}) and not root: run as root or install them" >&2
      return 1
    fi
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# What a build needs. Boost 1.81 comes as versioned packages: never the default 1.74 dev packages
# (libboost-dev, libboost-all-dev), which conflict with them.
BUILD_PACKAGES=(g++ cmake ninja-build libboost1.81-dev libboost-json1.81-dev libssl-dev doctest-dev python3 file)
# What the full test command needs on top: clang for the sanitizer and fuzz builds, the linters, the engine,
# the openssl and ip commands (the TLS engine's certificates and bridge), and Podman with what its rootless
# mode needs, procps for the service script's ps, pgrep and pkill (tests/e2e/podman_service.sh), and tmux,
# which types at run -it as a person would (tests/e2e/terminal_test.sh), and the packaging tools (the docs'
# commands run after each install route: tests/docs/commands_test.py). Node.js and npm come separately
# (ensure_node).
# What scripts/package.sh builds the wheel with (Debian's own Python's packages, offline).
PACKAGING_PACKAGES=(python3-build python3-setuptools python3-wheel python3-venv)
TEST_PACKAGES=(clang-14 libclang-rt-14-dev clang-format-14 clang-tidy-14 docker.io busybox-static openssl iproute2
  podman catatonit uidmap slirp4netns fuse-overlayfs procps tmux "${PACKAGING_PACKAGES[@]}")

# ensure_node — Node.js 18 or later with npm, which install @sigstore/core into the build folder to check our
# signed results with code we did not write (tests/e2e/attestation_test.sh). A machine's own Node.js is used
# when it has one: NodeSource's nodejs package carries npm and conflicts with Debian's npm package, so asking
# apt for npm there fails the whole install ("held broken packages").
ensure_node() {
  local major
  if command -v node >/dev/null && command -v npm >/dev/null; then
    major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
    if ((major >= 18)); then return 0; fi
    say "node $(node --version 2>/dev/null) is older than 18: @sigstore/core needs 18 or later"
  fi
  ensure_packages nodejs npm
}

# build_preset NAME [TARGET...]
build_preset() {
  local preset=$1
  shift
  cmake --preset "$preset" -S "$MAKA_ROOT" >/dev/null
  cmake --build --preset "$preset" ${1:+--target "$@"}
}

# debian_mirror — the Debian archive this machine's apt uses for bookworm (deb822 sources first, then the
# one-line format); never a host name of our own.
debian_mirror() {
  local uri
  uri=$(awk 'tolower($1) == "uris:" {u = $2} tolower($1) == "suites:" && / bookworm( |$)/ && u {print u; exit}
             /^$/ {u = ""}' /etc/apt/sources.list.d/*.sources 2>/dev/null)
  if [ -z "$uri" ]; then
    uri=$(awk '$1 == "deb" && $0 ~ / bookworm / {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' \
      /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | head -1)
  fi
  if [ -z "$uri" ]; then
    echo "no Debian bookworm archive in this machine's apt sources" >&2
    return 1
  fi
  echo "$uri"
}

# clean_image — a minimal Debian 12 image (debootstrap, no registry needed), made once and cached as
# maka-eval-clean:bookworm; prints its name. Needs a running engine and the Debian mirror.
clean_image() {
  local image=maka-eval-clean:bookworm rootfs
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    ensure_packages debootstrap
    rootfs=$(mktemp -d /var/tmp/maka-clean-XXXXXX)
    say "debootstrap a minimal bookworm (once)"
    if ! debootstrap --variant=minbase bookworm "$rootfs" "$(debian_mirror)" >/dev/null; then
      rm -rf "$rootfs"
      return 1
    fi
    tar -C "$rootfs" -c . | docker import - "$image" >/dev/null
    rm -rf "$rootfs"
  fi
  echo "$image"
}
