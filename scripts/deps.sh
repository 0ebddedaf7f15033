#!/usr/bin/env bash
# Installs the Debian packages jrpcd needs, and nothing else, in two lists:
# what building and serving need (jrpcd, its sample plugins and jrpc), and
# what the tests and the benchmarks add. Does nothing when all of them are
# present.
#
#   scripts/deps.sh run          building and serving (scripts/run.sh)
#   scripts/deps.sh [test]       both lists, and the one locale the tests
#                                need (scripts/test.sh; the default)
#   scripts/deps.sh --list run|test
#                                prints one list, a package a line, and
#                                installs nothing (test: only what the
#                                tests add). The README's dependency list
#                                is checked against these (tests/docs/
#                                readme_deps.sh).
set -euo pipefail

# Building and serving: ./scripts/run.sh, a -DJRPC_TESTS=OFF build.
run_pkgs=(cmake make gcc pkg-config
  g++ libsimdjson-dev # the simdjson parser backend (C++)
  libuv1-dev libjsmn-dev libinih-dev # event loops, the jsmn parser, the config
  libhttp-parser-dev # framing = http and content-length (lib/http.c)
  libwslay-dev # websocket = yes: WebSocket frames (lib/ws.c)
  libssl-dev # TLS listeners, jrpc's tls:// (JRPC_TLS)
  libnats-dev # [cluster]: push across a fleet through NATS (JRPC_NATS)
  libjansson-dev libedit-dev) # jrpc (cli/): its JSON and line editing
# What the tests (scripts/test.sh) and bench/ add.
test_pkgs=(libcmocka-dev # the unit tests (JRPC_TESTS)
  socat # most tests/cli scripts talk to the daemon through it
  python3 python3-prometheus-client # cli/tests' fake server; /metrics parsed
  prometheus # its promtool checks /metrics' exposition (cli_metrics)
  curl # the HTTP listener tests and the README's curl examples
  openssl # the tests make their TLS certificates
  python3-jsonschema # rpc.discover checked against the OpenRPC meta-schema
  npm # fetches that meta-schema and vscode-jsonrpc (cli_discover, cli_lsp)
  chromium # browser_kv_watch: a real browser (headless, puppeteer-core) on WebSocket push and CORS
  clang libclang-rt-14-dev # clang + libFuzzer: tests/fuzz
  libtsan2 # gcc's ThreadSanitizer runtime: the JRPC_TSAN build
  man-db groff-base # man/check.sh renders the man pages
  dpkg-dev # dpkg-shlibdeps: the .deb's Depends (tests/pkg)
  locales # a comma-decimal locale for test_jsontext_locale (below)
  systemd # systemd-socket-activate, systemd-analyze: cli_activation_ssa, _units
  iproute2 # ip: docs_examples_live brings up its own loopback with 10.0.0.5 on it
  strace # cli_sockpath_symlink: holds jrpcd in chmod (inject=...:delay_enter)
  haproxy # tests/scale: the balancer in front of three jrpcds
  nats-server # the broker of the [cluster] tests (cli_cluster, scale_fleet)
  valgrind) # bench/callgrind*.sh: the instruction counts of BENCHMARKS.md
# The comma-decimal locale test_jsontext_locale runs under.
readonly LOCALE=de_DE.UTF-8

usage() {
  echo "usage: $0 [run|test] | --list run|test" >&2
  exit 2
}

mode="test"
case "${1:-}" in
--list)
  case "${2:-}" in
  run) printf '%s\n' "${run_pkgs[@]}" ;;
  test) printf '%s\n' "${test_pkgs[@]}" ;;
  *) usage ;;
  esac
  exit 0
  ;;
run | test) mode=$1 ;;
'') ;;
*) usage ;;
esac
(($# <= 1)) || usage

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: $1; not root, run: sudo $0 $mode" >&2
    exit 1
  fi
}

pkgs=("${run_pkgs[@]}")
if [ "$mode" = test ]; then
  for p in "${test_pkgs[@]}"; do
    # Debian's npm (and node) only where there is no npm: a machine with
    # another node (say NodeSource's, whose package ships npm) keeps it.
    if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then
      continue
    fi
    pkgs+=("$p")
  done
fi
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

[ "$mode" = test ] || exit 0
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
