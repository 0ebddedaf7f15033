#!/usr/bin/env bash
# Installs the Debian packages jrpcd needs to build and test, and nothing
# else. Does nothing when all of them are present.
set -euo pipefail
pkgs=(cmake make gcc g++ pkg-config libuv1-dev libjsmn-dev libsimdjson-dev
      libcmocka-dev libinih-dev socat valgrind
      libjansson-dev libedit-dev python3 # jrpc (cli/) and its tests
      clang libclang-rt-14-dev # clang + libFuzzer: tests/fuzz
      man-db groff-base # man/check.sh renders the man pages
      dpkg-dev) # dpkg-shlibdeps: the .deb's Depends (tests/pkg)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing packages and not root; run: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
