#!/usr/bin/env bash
# kv_watch.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# A real browser against server push (issue 23 point 8): Debian's chromium,
# headless, driven by npm's puppeteer-core (pinned, installed into the
# test's folder; it downloads no browser). driver.js serves kv_watch.html
# over http://127.0.0.1:PAGE (a page from file:// would send Origin: null,
# which jrpcd refuses by design; we serve it rather than list null). The
# page opens a WebSocket to jrpcd, calls kv.watch(""), makes a kv.set with
# fetch() (a CORS POST, whose OPTIONS preflight the driver sees in
# DevTools' network events), and shows the kv.changed it gets,
# which is checked here: key, value, op and the kv.watch result's id.
# The same page against a listener whose origins do not list it: the
# upgrade and the fetch are refused, and the kv.set never ran.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../cli/lib.sh
source "$here/../cli/lib.sh"

cli_args "$@"
# 24.x: the last line whose engines accept Debian 12's node 20; it speaks
# CDP to Chromium 156 (bookworm-security's) without a downloaded browser.
readonly PUPPETEER=puppeteer-core@24.43.1
readonly CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
readonly CHANGE='"result":{"key":"listed","value":{"from":"chromium"},"op":"set"}'

# drive NAME=RPC_PORT...: the page against each listener in turn, in one
# browser; the steps the pages showed in $T/driver.out.
drive() {
  (cd "$T" && NODE_PATH="$T/npm/node_modules" timeout 60 \
    node "$here/driver.js" "$PAGE" "$@" >"$T/driver.out" 2>&1) || true
}

# step NAME STEP: what the page showed for STEP in run NAME, or nothing.
step() {
  grep -m1 "^$1 $2 " "$T/driver.out" | cut -d' ' -f3- || true
}

# expect_step NAME STEP WANT
expect_step() {
  local got
  got=$(step "$1" "$2")
  if [[ "$got" == "$3" ]]; then
    pass "$1: $2: $got"
  else
    fail "$1: $2: expected ${3:-nothing}, got ${got:-nothing}"
    show "$T/driver.out"
  fi
}

main() {
  need_file "$JRPCD" jrpcd
  [[ -x "$CHROMIUM" ]] || missing "chromium is needed ($CHROMIUM; scripts/deps.sh)"
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    missing "npm and node are needed for puppeteer-core (scripts/deps.sh)"
  fi
  setup_tmp
  local web foreign
  PAGE=$(free_port)
  web=$(free_port)
  foreign=$(free_port)
  cat >"$T/browser.conf" <<CONF
[server]
workers = 2
plugin_dir = $HANDLERS
[listen local]
unix = $T/browser.sock
[listen web]
tcp = 127.0.0.1:$web
framing = http
websocket = yes
origins = http://127.0.0.1:$PAGE
[listen foreign]
tcp = 127.0.0.1:$foreign
framing = http
websocket = yes
origins = https://ok.example
[plugin kv]
path = kv.so
CONF
  npm_install "$PUPPETEER"
  start_daemon browser "$T/browser.conf" "$T/browser.sock"

  drive refused="$foreign" listed="$web"
  expect_step refused ws refused
  expect_step refused set "refused: Failed to fetch"
  expect_step refused changed ""
  expect_call "the refused page's kv.set never ran" "$T/browser.sock" \
    '{"jsonrpc":"2.0","method":"kv.get","params":["refused"],"id":1}' \
    '{"jsonrpc":"2.0","error":{"code":1002,"message":"No such key","data":{"key":"refused"}},"id":1}'

  expect_step listed ws open
  local sub
  sub=$(step listed watch | sed -n 's/^{"jsonrpc":"2.0","result":\("[0-9a-f]\{1,64\}"\),"id":1}$/\1/p')
  if [[ -n "$sub" ]]; then
    pass "listed: kv.watch answered with subscription $sub"
  else
    fail "listed: kv.watch: expected a subscription id, got $(step listed watch)"
    show "$T/driver.out"
  fi
  expect_step listed preflight "http://127.0.0.1:$web/"
  expect_step listed set '{"jsonrpc":"2.0","result":{"created":true},"id":2}'
  expect_step listed changed "{\"subscription\":${sub:-"ID"},$CHANGE}"
  stop_daemon browser "$PID" "$T/browser.sock"
  finish
}

main "$@"
