#!/usr/bin/env bash
# Installs and builds the peer JSON-RPC servers used by the jrpcd benchmarks.
#
#   bench/peers/setup.sh [all|node|cpp]      (default: all)
#
# node: npm packages json-rpc-2.0 and jayson (exact versions from
#       package-lock.json) into bench/peers/node_modules, via `npm ci`.
#       Skipped when node_modules already matches the lock file.
# cpp:  Debian's libjsonrpccpp-dev (libjson-rpc-cpp 0.7.0), installed with
#       apt-get when missing and we are root; then `make` builds
#       bench/peers/build/jsonrpccpp_server (make skips it when up to date).
# Idempotent; exits non-zero with a message naming what is missing.
set -euo pipefail

DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WHAT="${1:-all}"
case "$WHAT" in all|node|cpp) ;; *) echo "usage: $0 [all|node|cpp]" >&2; exit 2;; esac

say() { echo "peers/setup: $*" >&2; }
die() { say "error: $*"; exit 1; }

apt_install() {
  # apt_install PKG...: install Debian packages if we are root, else explain.
  if [ "$(id -u)" -ne 0 ]; then
    die "missing Debian packages; run as root: apt-get update && apt-get install -y $*"
  fi
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install these packages by hand: $*"
  say "apt-get install -y $*"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends "$@" >&2; then
    say "retrying after apt-get update"
    apt-get update >&2 || die "apt-get update failed"
    apt-get install -y --no-install-recommends "$@" >&2 || die "apt-get install $* failed"
  fi
}

setup_node() {
  command -v node >/dev/null 2>&1 || die "node not found (need Node.js >= 20; Debian: apt-get install nodejs npm)"
  command -v npm >/dev/null 2>&1 || die "npm not found (Debian: apt-get install npm)"
  local major
  major="$(node -p 'process.versions.node.split(".")[0]')"
  [ "$major" -ge 20 ] || die "node $(node --version) is too old; jayson 5 needs Node.js >= 20"

  if [ -d "$DIR/node_modules" ] && npm ls --prefix "$DIR" --all >/dev/null 2>&1; then
    say "node_modules complete, skipping npm"
  elif [ -f "$DIR/package-lock.json" ]; then
    say "npm ci --prefix $DIR"
    npm ci --prefix "$DIR" --no-audit --no-fund >&2 || die "npm ci failed"
  else
    say "no package-lock.json; npm install --prefix $DIR"
    npm install --prefix "$DIR" --no-audit --no-fund >&2 || die "npm install failed"
  fi
  node -e 'require(process.argv[1] + "/node_modules/jayson"); require(process.argv[1] + "/node_modules/json-rpc-2.0")' "$DIR" \
    || die "node packages did not load"
  say "node peers ready: jayson $(node -p "require('$DIR/node_modules/jayson/package.json').version"), json-rpc-2.0 $(node -p "require('$DIR/node_modules/json-rpc-2.0/package.json').version")"
}

setup_cpp() {
  local need=()
  command -v g++ >/dev/null 2>&1 || need+=(g++)
  command -v make >/dev/null 2>&1 || need+=(make)
  command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
  if ! { command -v pkg-config >/dev/null 2>&1 &&
         pkg-config --exists libjsonrpccpp-server libjsonrpccpp-common jsoncpp &&
         [ -f /usr/include/jsonrpccpp/server/connectors/unixdomainsocketserver.h ]; }; then
    need+=(libjsonrpccpp-dev)
  fi
  if [ "${#need[@]}" -gt 0 ]; then
    apt_install "${need[@]}"
  fi
  say "libjson-rpc-cpp $(pkg-config --modversion libjsonrpccpp-server)"
  make -C "$DIR" --no-print-directory >&2 || die "building jsonrpccpp_server failed"
  say "cpp peer ready: $DIR/build/jsonrpccpp_server"
}

case "$WHAT" in
  node) setup_node ;;
  cpp) setup_cpp ;;
  all) setup_node; setup_cpp ;;
esac
