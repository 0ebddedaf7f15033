#!/usr/bin/env bash
# Installs the Debian packages jrpcd needs to build and test, and nothing
# else, and the one locale the tests need. Does nothing when all of them
# are present.
set -euo pipefail
pkgs=(cmake make gcc g++ pkg-config libuv1-dev libjsmn-dev libsimdjson-dev
      libcmocka-dev libinih-dev socat valgrind
      libhttp-parser-dev # framing = http and content-length (lib/http.c)
      python3-prometheus-client curl # /metrics parsed, README curl examples
      libjansson-dev libedit-dev python3 # jrpc (cli/) and its tests
      libssl-dev openssl # TLS listeners; the tests make their certificates
      python3-jsonschema # rpc.discover checked against the OpenRPC meta-schema
      clang libclang-rt-14-dev # clang + libFuzzer: tests/fuzz
      libtsan2 # gcc's ThreadSanitizer runtime: the JRPC_TSAN build
      man-db groff-base # man/check.sh renders the man pages
      dpkg-dev # dpkg-shlibdeps: the .deb's Depends (tests/pkg)
      locales # a comma-decimal locale for test_jsontext_locale (below)
      systemd # systemd-socket-activate, systemd-analyze: cli_activation_ssa, _units
      strace # cli_sockpath_symlink: holds jrpcd in chmod (inject=...:delay_enter)
      haproxy) # tests/scale: the balancer in front of three jrpcds
# The comma-decimal locale test_jsontext_locale runs under.
readonly LOCALE=de_DE.UTF-8

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: $1; not root, run: sudo $0" >&2
    exit 1
  fi
}

# npm (and node) fetch the pinned OpenRPC meta-schema for cli_discover.
# Debian's npm only where there is none: a machine with another node (say
# NodeSource's, whose package ships npm) keeps it.
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  need_root "missing packages ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# locale -a spells it de_DE.utf8. Enabled in /etc/locale.gen, so that a
# later locale-gen keeps it; --keep-existing compiles only what is missing.
if ! locale -a 2>/dev/null | grep -qix "${LOCALE%.UTF-8}\.utf-\?8"; then
  echo "deps: generating the $LOCALE locale" >&2
  need_root "the $LOCALE locale is missing"
  sed -i "s/^# *\($LOCALE UTF-8\)\$/\1/" /etc/locale.gen 2>/dev/null || true
  grep -qx "$LOCALE UTF-8" /etc/locale.gen 2>/dev/null ||
    printf '\n%s UTF-8\n' "$LOCALE" >>/etc/locale.gen
  locale-gen --keep-existing >/dev/null
fi
