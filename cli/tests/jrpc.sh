#!/usr/bin/env bash
# jrpc.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT BUILD_DIR
#
# jrpc, the command-line client, as installed: `cmake --install BUILD_DIR`
# into a private prefix, then that bin/jrpc against a live jrpcd (Unix
# socket, TCP with newline and with length framing) for every form of
# jrpc(1), and against fake_server.py for what jrpcd cannot show yet
# (rpc.discover: -l, -d, checked and converted params, completion) or
# should never do (garbage, a truncated reply, a wrong id, no reply, a
# missing reply). The prompt is driven through a pty (pty_session.py).
# Every run of jrpc is bounded by `timeout` and its stderr is checked for
# sanitizer reports.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../../tests/cli/lib.sh
source "$here/../../tests/cli/lib.sh"
# shellcheck source-path=SCRIPTDIR source=jrpc_lib.sh
source "$here/jrpc_lib.sh"

(($# == 5)) || die "usage: $0 JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT BUILD_DIR"
cli_args "$1" "$2" "$3" "$4"
BUILD=$(realpath -e -- "$5") || die "build dir not found: $5"

install_layout() {
  timeout 120 cmake --install "$BUILD" --prefix "$T/root" >"$T/install.log" 2>&1 ||
    { show "$T/install.log"; die "cmake --install $BUILD failed"; }
  JRPC=$T/root/bin/jrpc
  local f
  for f in bin/jrpc share/man/man1/jrpc.1 share/bash-completion/completions/jrpc; do
    if [[ -e $T/root/$f ]]; then
      pass "installed: $f"
    else
      fail "cmake --install did not lay out $f"
    fi
  done
  need_file "$JRPC" "the installed jrpc"
}

# Two free TCP ports and the config that listens on them and on a Unix
# socket (start_jrpcd, jrpc_lib.sh, runs it again for each attempt).
ports_and_conf() {
  TCP=$(free_port)
  TCPLEN=$TCP
  while [[ $TCPLEN == "$TCP" ]]; do TCPLEN=$(free_port); done
  write_jrpcd_conf
}

write_jrpcd_conf() {
  cat >"$T/jrpcd.conf" <<EOF
$(conf_server)
[listen local]
unix = $T/jrpcd.sock
mode = 0600
[listen tcp]
tcp = 127.0.0.1:$TCP
[listen tcp-length]
tcp = 127.0.0.1:$TCPLEN
framing = length
[listen nodisc]
unix = $T/nodisc.sock
mode = 0600
methods = math.*
discover = no
$(conf_plugins math echo sleep)
EOF
}

# The forms of jrpc(1) against jrpcd, on its Unix socket ($JRPC_SOCKET).
test_calls() {
  export JRPC_SOCKET=$T/jrpcd.sock
  run add math.add 1 2
  expect add 0 3
  run positional_json echo '{"x":[1,2]}' true hello
  expect positional_json 0 '[
  {
    "x": [
      1,
      2
    ]
  },
  true,
  "hello"
]'
  run compact --compact echo '{"x":[1,2]}' true hello -1 2.50 null
  expect compact 0 '[{"x":[1,2]},true,"hello",-1,2.5,null]'
  run named --compact echo a=1 'b:=[1,"x"]' c=hello
  expect named 0 '{"a":"1","b":[1,"x"],"c":"hello"}'
  run named_divide math.divide a:=1 b:=4
  expect named_divide 0 0.25
  run rpc_error math.divide 1 0
  expect rpc_error 1 "" "error -32602: Invalid params"
  expect_in rpc_error err '"reason": "division by zero"' || true
  run unknown no.such.method
  expect unknown 1 "" "error -32601: Method not found"
  run raw --raw math.divide 1 4
  expect raw 0 '{"jsonrpc":"2.0","result":0.25,"id":1}'
  run raw_error --raw math.divide 1 0
  expect raw_error 1 '{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params","data":{"param":"b","reason":"division by zero"}},"id":1}'
  run id_string --raw --id abc math.add 1 2
  expect id_string 0 '{"jsonrpc":"2.0","result":3,"id":"abc"}'
  run id_number --raw --id 42 math.add 1 2
  expect id_number 0 '{"jsonrpc":"2.0","result":3,"id":42}'
  run id_bad --id '[1]' math.add 1 2
  expect id_bad 2 "" '--id: "[1]" is not a string, number or null'
  run color --color math.add 1 2
  expect color 0 $'\e[36m3\e[0m'
}

test_endpoints() {
  run tcp -t "127.0.0.1:$TCP" math.multiply 6 7
  expect tcp 0 42
  run tcp_length -t "127.0.0.1:$TCPLEN" -f length math.multiply 6 7
  expect tcp_length 0 42
  RC=0
  JRPC_SOCKET='' JRPC_ADDRESS="127.0.0.1:$TCP" timeout 30 "$JRPC" math.add 2 2 \
    >"$T/address.out" 2>"$T/address.err" || RC=$?
  expect address 0 4
  # The default in XDG_RUNTIME_DIR; tests/cli/sockpath.sh checks the one
  # without it (${TMPDIR:-/tmp}/jrpcd-UID) and refusals of planted sockets.
  if [[ -e /run/jrpcd/jrpcd.sock ]]; then
    echo "note: /run/jrpcd/jrpcd.sock exists: the XDG_RUNTIME_DIR default is not checked"
  else
    RC=0
    env -u JRPC_SOCKET -u JRPC_ADDRESS XDG_RUNTIME_DIR="$T" timeout 30 "$JRPC" \
      math.add 3 3 >"$T/xdg.out" 2>"$T/xdg.err" || RC=$?
    expect xdg 0 6
  fi
  run bad_framing -f lines math.add 1 2
  expect bad_framing 2 "" '-f: "lines" is not newline, length, http, content-length or websocket'
  run bad_tcp -t nocolon math.add 1 2
  expect bad_tcp 2 "" '"nocolon" is not HOST:PORT'
  run timeout --timeout 300 sleep.ms 5000
  expect timeout 3 "" "timed out after 300 ms waiting for the reply"
  run no_method_no_tty
  expect no_method_no_tty 2 "" "no METHOD (and stdin is not a terminal for the prompt)"
  run mixed echo 1 a=2
  expect mixed 2 "" "params are either all positional or all name=value, not both"
  run bad_json echo 'a:=[1'
  expect bad_json 2 "" "a: the value after := is not JSON"
  run two_modes -l math.add
  expect two_modes 2 "" "exclude each other"
  test_token
}

# Issue 25 point 2: nothing wrong passes silently, and the call options.
test_nothing_silent() {
  export JRPC_SOCKET=$T/jrpcd.sock
  run json_typo kv.set cfg '{"retries": 3,}'
  expect json_typo 2 "" 'argument 2, {"retries": 3,}, looks like JSON but is not'
  expect_in json_typo err "send it as a string with NAME=TEXT or as a JSON string" || true
  expect_in json_typo err "Try 'jrpc --help' for more." || true
  run number_typo echo 1.2.3
  expect number_typo 2 "" "argument 1, 1.2.3, looks like JSON but is not"
  run quote_typo echo '"unclosed'
  expect quote_typo 2 "" 'argument 1, "unclosed, looks like JSON but is not'
  run json_as_text --compact echo 'cfg={"retries": 3,}'
  expect json_as_text 0 '{"cfg":"{\"retries\": 3,}"}'
  run words_as_text --compact echo '"1.2.3"' -5 x-1 .x
  expect words_as_text 0 '["1.2.3",-5,"x-1",".x"]'
  run option_after echo x --compact
  expect option_after 2 "" "--compact after the method echo: options go before it (or write -- first to send it as a word)"
  run dashdash --compact echo -- x --compact
  expect dashdash 0 '["x","--compact"]'
  run verbose -v --compact math.add 1 2
  expect verbose 0 3 'jrpc: sending {"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}'
  RC=0
  JRPC_SOCKET=$T/nothing.sock timeout 30 "$JRPC" --dry-run --id 5 echo a=1 >"$T/dry_run.out" 2>"$T/dry_run.err" || RC=$?
  expect dry_run 0 '{"jsonrpc":"2.0","method":"echo","params":{"a":"1"},"id":5}'
  printf 'two\nlines "quoted"\n' >"$T/param.txt"
  printf '{"k": [1, 2]}\n' >"$T/param.json"
  run at_file --compact echo "text=@$T/param.txt" "obj:=@$T/param.json"
  expect at_file 0 '{"text":"two\nlines \"quoted\"\n","obj":{"k":[1,2]}}'
  printf 'echo a=1\necho "secret=@%s"\n' "$T/param.txt" >"$T/batch_at.txt"
  run batch_at --batch "$T/batch_at.txt"
  expect batch_at 2 "" "batch_at.txt:2: secret: NAME=@FILE is for the command line and the prompt: a batch line may not read local files into a request"
  run at_missing echo "text=@$T/none.txt"
  expect at_missing 2 "" "text=@$T/none.txt: No such file or directory"
  run params_whole --compact --params '{"a":[1,{"b":null}]}' echo
  expect params_whole 0 '{"a":[1,{"b":null}]}'
  run params_and_args --params '[1]' echo 2
  expect params_and_args 2 "" "--params: the params are given as ARGs too"
  run params_scalar --params 3 echo
  expect params_scalar 2 "" "--params: 3 is neither an array nor an object"
  run raw_output_number -r math.add 1 2
  expect raw_output_number 0 3
  run describe_any -d echo
  expect_in describe_any out "params (either): any (not described: sent as written)" &&
    pass "describe_any: -d echo says it takes any params"
  run describe_stats -d rpc.stats
  expect describe_stats 0 'rpc.stats

params: any (not described: sent as written)'
  run typo math.ad 1 2
  expect typo 1 "" "error -32601: Method not found"
  expect_in typo err "did you mean math.add? (jrpc -l lists the methods)" || true
  run typo_far zzzzzz 1 2
  expect typo_far 1 "" "error -32601: Method not found"
  expect_not_in typo_far err "did you mean" || true
  run typo_describe -d math.multipyl
  expect typo_describe 1 "" "did you mean math.multiply?"
  run usage_short --no-such-option
  expect usage_short 2 "" "Try 'jrpc --help' for more."
  expect_eq "usage_short: stderr is two lines, not the help" "$(wc -l <"$T/usage_short.err")" 2
  run usage_timeout --timeout x math.add 1 2
  expect_eq "usage_timeout: two lines" "$(wc -l <"$T/usage_timeout.err")" 2
}

# --wait: jrpc tries again while nothing listens, and gives up at MS.
test_wait() {
  local pid
  rm -f "$T/late.sock"
  bash -c 'sleep 0.7; exec python3 "$1" discover "$2"' _ "$here/fake_server.py" "$T/late.sock" &
  pid=$!
  DAEMON_PIDS+=("$pid")
  run wait_late --wait=10000 -u "$T/late.sock" -r say 'a "quoted" text'
  expect wait_late 0 'a "quoted" text'
  run raw_output_quoted -u "$T/late.sock" say 'a "quoted" text'
  expect raw_output_quoted 0 '"a \"quoted\" text"'
  run raw_output_object -u "$T/late.sock" -r --compact ping
  expect raw_output_object 0 '{"method":"ping"}'

  stop_bg "$pid"
  local start=$SECONDS
  run wait_gone --wait=400 -u "$T/late.sock" ping
  expect wait_gone 2 "" "cannot connect to unix:$T/late.sock: no daemon listening"
  expect_eq "wait_gone: one message" "$(grep -c 'cannot connect' "$T/wait_gone.err")" 1
  ((SECONDS - start < 10)) || fail "wait_gone: took $((SECONDS - start))s"
  run wait_bad --wait=0 ping
  expect wait_bad 2 "" '--wait: "0" is not a number of milliseconds'
}

# Issue 25 point 3: connection failures in the user's terms.
test_failures() {
  run dead -u "$T/nothing.sock" math.add 1 2
  expect dead 2 "" "cannot connect to unix:$T/nothing.sock: no daemon listening: there is no socket there (is jrpcd running, and is this its socket?)"
  # A socket file nobody listens on any more.
  python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$T/stale.sock"
  run stale -u "$T/stale.sock" math.add 1 2
  expect stale 2 "" "cannot connect to unix:$T/stale.sock: no daemon listening: the socket file is left from one that stopped"
  run tcp_refused -t "127.0.0.1:$(free_port)" math.add 1 2
  expect tcp_refused 2 "" "no daemon listening on that port (is jrpcd running, with a listener there?)"
  # Permission: a socket file without write permission for the caller
  # (root passes mode bits, so root asks as nobody).
  mkdir -p "$T/pub"
  chmod 0755 "$T/pub"
  python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$T/pub/perm.sock"
  RC=0
  if ((EUID == 0)); then
    chmod 0600 "$T/pub/perm.sock"
    chmod 0711 "$T"
    setpriv --reuid=nobody --regid=nogroup --clear-groups timeout 30 "$JRPC" -u "$T/pub/perm.sock" math.add 1 2 \
      >"$T/perm.out" 2>"$T/perm.err" || RC=$?
    chmod 0700 "$T"
  else
    chmod 0000 "$T/pub/perm.sock"
    timeout 30 "$JRPC" -u "$T/pub/perm.sock" math.add 1 2 >"$T/perm.out" 2>"$T/perm.err" || RC=$?
  fi
  expect perm 2 "" "cannot connect to unix:$T/pub/perm.sock: permission denied: the socket is mode 0"
  expect_in perm err "the listener's mode and group decide who may connect" || true
  # A framing other than the listener's.
  run want_length -t "127.0.0.1:$TCPLEN" math.add 1 2
  expect want_length 2 "" "tcp:127.0.0.1:$TCPLEN: the reply begins with a 4-byte length, not JSON: this listener has framing = length; add -f length"
  run want_newline -t "127.0.0.1:$TCP" -f length math.add 1 2
  expect want_newline 2 "" "tcp:127.0.0.1:$TCP: the server answers newline-framed JSON, not length-framed: leave out -f length"
  run http_on_length "http://127.0.0.1:$TCPLEN/" math.add 1 2
  expect http_on_length 2 "" "the server answers length-framed JSON, not HTTP: use tcp://127.0.0.1:$TCPLEN with -f length"
}

# --token-file and JRPC_TOKEN: checked, and said unsent to a newline or
# length endpoint (jrpc reaches no HTTP one yet).
test_token() {
  (umask 077 && printf 'PFOkg9g1x1-Kn7CadWPme0SZ8LpQ55JHlgKzmSKJtE4\n' >"$T/token")
  run token_file --token-file "$T/token" math.multiply 6 7
  expect token_file 0 42 "--token-file: the token goes to HTTP endpoints only, and this one is newline framed: not sent"
  chmod 0644 "$T/token"
  run token_readable --token-file "$T/token" math.multiply 6 7
  expect token_readable 2 "" "--token-file $T/token: mode 0644 lets others read it"
  (umask 077 && printf 'two words\n' >"$T/token2")
  run token_bad --token-file "$T/token2" math.multiply 6 7
  expect token_bad 2 "" "--token-file: not a bearer token"
  run token_none --token-file "$T/nothing" math.multiply 6 7
  expect token_none 2 "" "--token-file $T/nothing: No such file or directory"
  RC=0
  JRPC_TOKEN='x y' timeout 30 "$JRPC" math.add 2 2 >"$T/token_env.out" 2>"$T/token_env.err" || RC=$?
  expect token_env 2 "" "JRPC_TOKEN: not a bearer token"
  RC=0
  JRPC_TOKEN='abc-._~+/==' timeout 30 "$JRPC" math.add 2 2 >"$T/token_env_ok.out" 2>"$T/token_env_ok.err" || RC=$?
  expect token_env_ok 0 4
}

# The calls and errors rpc.stats counts for METHOD, as "calls errors".
stat_of() {
  "$JRPC" --compact rpc.stats |
    python3 -c 'import json,sys; m=json.load(sys.stdin)["methods"][sys.argv[1]]; print(m["calls"], m["errors"])' "$1"
}

test_notify_batch_stdin() {
  local before after
  before=$(stat_of echo)
  run notify -n echo 1
  expect notify 0 ""
  after=$(stat_of echo)
  if [[ ${before%% *} -lt ${after%% *} ]]; then
    pass "notify: rpc.stats counts the echo call ($before -> $after)"
  else
    fail "notify: echo's calls did not go up ($before -> $after)"
  fi
  printf '%s\n' 'math.add 1 2' '# a comment' '' 'echo e=1' \
    'math.divide 1 0' '-n echo 9' 'math.subtract 10 4' >"$T/batch.txt"
  run batch --compact --batch "$T/batch.txt"
  expect batch 1 '3
{"e":"1"}
6' "error -32602: Invalid params"
  printf '%s\n' "echo 'a b' \"c \\\"d\\\"\" e\\ f" >"$T/batch2.txt"
  run batch_quotes --compact --batch "$T/batch2.txt"
  expect batch_quotes 0 '["a b","c \"d\"","e f"]'
  RC=0
  printf 'math.add 1 2\nmath.multiply 2 5\n' |
    timeout 30 "$JRPC" --compact --batch - >"$T/batch_stdin.out" 2>"$T/batch_stdin.err" || RC=$?
  expect batch_stdin 0 '3
10'
  printf 'echo "unclosed\n' >"$T/batch3.txt"
  run batch_usage --batch "$T/batch3.txt"
  expect batch_usage 2 "" "batch3.txt:1: unclosed \" at column 6"
  run batch_missing_file --batch "$T/none.txt"
  expect batch_missing_file 2 "" "none.txt: No such file or directory"

  printf '%s\n' '{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}' \
    '{"jsonrpc":"2.0","method":"echo","params":[5]}' 'not json' \
    '[{"jsonrpc":"2.0","method":"echo","params":[1],"id":"b1"},{"jsonrpc":"2.0","method":"echo","params":[2],"id":"b2"}]' \
    >"$T/stdin.txt"
  RC=0
  timeout 30 "$JRPC" --stdin <"$T/stdin.txt" >"$T/stdin.out" 2>"$T/stdin.err" || RC=$?
  expect stdin 1 '{"jsonrpc":"2.0","result":3,"id":1}
{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}
[{"jsonrpc":"2.0","result":[1],"id":"b1"},{"jsonrpc":"2.0","result":[2],"id":"b2"}]'
  head -1 "$T/stdin.txt" >"$T/stdin_ok.txt"
  RC=0
  timeout 30 "$JRPC" --stdin <"$T/stdin_ok.txt" >"$T/stdin_ok.out" 2>"$T/stdin_ok.err" || RC=$?
  expect stdin_ok 0 '{"jsonrpc":"2.0","result":3,"id":1}'

  test_stdin_streams

  # jrpcd's own rpc.discover: the sample plugins' descriptions.
  run list_jrpcd -l
  expect list_jrpcd 0 "$(printf '%-14s %s\n' echo "the params back, byte for byte" \
    math.add "a + b" math.divide "a / b (b = 0 is an error)" \
    math.multiply "a * b" math.subtract "a - b" rpc.stats "" \
    sleep.ms "answers ms after ms milliseconds" \
    sleep.work_ms "the same, sleeping on a pool thread" | sed 's/ *$//')"
  # Named words become numbers where the description says number...
  run convert_jrpcd --compact math.add a=1 b=2.5
  expect convert_jrpcd 0 "3.5"
  # ...and a missing required param is a usage error, before sending.
  run missing_jrpcd math.divide a=1
  expect missing_jrpcd 2 "" "math.divide: missing required param b"
  # A method described as taking anything (echo) is sent as written.
  run any_jrpcd --compact echo 1 two '{"x":3}'
  expect any_jrpcd 0 '[1,"two",{"x":3}]'
  # On a listener with discover = no, rpc.discover is not there.
  run list_nodisc -u "$T/nodisc.sock" -l
  expect list_nodisc 1 "" "has no rpc.discover (error -32601: Method not found)"
}

# --stdin sends each line as it comes and prints each reply as it arrives:
# the first reply is read before the second request is written.
test_stdin_streams() {
  local line="" rc=0
  coproc STREAM { timeout 30 "$JRPC" --stdin 2>"$T/stream.err"; }
  local pid=$STREAM_PID
  printf '%s\n' "$ADD" >&"${STREAM[1]}"
  read -t 10 -r line <&"${STREAM[0]}" || true
  if [[ $line == "$THREE" ]]; then
    pass "stdin: the first reply arrives while stdin is still open"
  else
    fail "stdin: no reply to the first line before the second (got: '$line')"
  fi
  printf '%s\n' '{"jsonrpc":"2.0","method":"math.add","params":[2,2],"id":2}' >&"${STREAM[1]}"
  local wfd=${STREAM[1]}
  exec {wfd}>&- # stdin's end
  line=""
  read -t 10 -r line <&"${STREAM[0]}" || true
  wait "$pid" || rc=$?
  if [[ $line == '{"jsonrpc":"2.0","result":4,"id":2}' ]] && ((rc == 0)); then
    pass "stdin: the second reply, then exit 0 at the end of stdin"
  else
    fail "stdin: second reply '$line', exit status $rc"
    show "$T/stream.err"
  fi
  check_sanitizer "$T/stream.err" "stdin: jrpc" || true
}

start_fake() {
  local mode=$1
  rm -f "$T/$mode.sock" # a stopped one's file: wait for the new one's
  start_bg "fake server ($mode)" "-S $T/$mode.sock" python3 "$here/fake_server.py" "$mode" "$T/$mode.sock"
}

# rpc.discover: -l, -d, params checked and converted.
test_discovery() {
  start_fake discover
  export JRPC_SOCKET=$T/discover.sock
  run list -l
  expect list 0 'math.add  Adds two numbers
greet     Greets someone
ping'
  run describe -d math.add
  expect describe 0 'math.add - Adds two numbers

params (by-position):
  a            number         required
  b            number         required  the second addend
result: sum number
examples:
  one and two
    jrpc math.add 1 2
    => 3'
  run describe_missing -d nope
  expect describe_missing 1 "" "has no method nope (jrpc -l lists them)"
  run convert --compact greet name=bob loud=true times=3
  expect convert 0 '{"method":"greet","params":{"name":"bob","loud":true,"times":3}}'
  run by_name --compact greet 42
  expect by_name 0 '{"method":"greet","params":{"name":"42"}}'
  run nullable --compact greet name=x times=null
  expect nullable 0 '{"method":"greet","params":{"name":"x","times":null}}'
  run missing_required greet loud=true
  expect missing_required 2 "" "greet: missing required param name"
  run refused greet name=x loud=1
  expect refused 2 "" 'param loud: expects boolean, got "1"'
  run explicit_json greet name:=1
  expect explicit_json 2 "" "param name: expects string, got 1"
  run unknown_param greet name=x colour=red
  expect unknown_param 2 "" "greet has no param colour (its params: name, loud, times)"
  run too_many math.add 1 2 3
  expect too_many 2 "" "math.add takes at most 2 params (a, b)"
  run not_number math.add 1 x
  expect not_number 2 "" 'param b: expects number, got "x"'
  run positional_missing math.add 1
  expect positional_missing 2 "" "math.add: missing required param b"
  run no_check --no-check --compact math.add 1 x
  expect no_check 0 '{"method":"math.add","params":[1,"x"]}'
  run undescribed --compact other.method 1 x
  expect undescribed 0 '{"method":"other.method","params":[1,"x"]}'
  # The fake server answers a batch in reverse order.
  printf 'greet name=ann\n-n ping\nmath.add 1 2\n' >"$T/batch_order.txt"
  run batch_order --compact --batch "$T/batch_order.txt"
  expect batch_order 0 '{"method":"greet","params":{"name":"ann"}}
{"method":"math.add","params":[1,2]}'
  printf 'greet name=ann\nmath.add 1 two\n' >"$T/batch_check.txt"
  run batch_check --batch "$T/batch_check.txt"
  expect batch_check 2 "" 'batch_check.txt:2: param b: expects number, got "two"'
  stop_bg "$BG_PID"
  unset JRPC_SOCKET
}

# A server that misbehaves: every case is a clear message and status 2
# (3 for one that never answers), never a wrong answer.
test_malformed() {
  local mode pids=()
  for mode in garbage truncated wrongid silent noreply dropone; do
    start_fake "$mode"
    pids+=("$BG_PID")
  done
  run garbage -u "$T/garbage.sock" math.add 1 2
  expect garbage 2 "" "the reply is not JSON"
  run truncated -u "$T/truncated.sock" math.add 1 2
  expect truncated 2 "" "the connection closed in the middle of a reply (26 bytes of it received)"
  run wrongid -u "$T/wrongid.sock" math.add 1 2
  expect wrongid 2 "" "the reply's id 999 does not match the request's id 1"
  run silent -u "$T/silent.sock" --timeout 500 math.add 1 2
  expect silent 3 "" "timed out after 500 ms waiting for the reply"
  run noreply -u "$T/noreply.sock" math.add 1 2
  expect noreply 2 "" "the server closed the connection without replying"
  printf 'math.add 1 2\nmath.add 3 4\n' >"$T/drop.txt"
  run batch_dropped -u "$T/dropone.sock" --compact --batch "$T/drop.txt"
  expect batch_dropped 2 '{"method":"math.add","params":[3,4]}' "drop.txt:1: no reply to request 1 (math.add)"
  printf '%s\n' '{"jsonrpc":"2.0","method":"a","id":1}' '{"jsonrpc":"2.0","method":"b","id":2}' >"$T/drop2.txt"
  RC=0
  timeout 30 "$JRPC" -u "$T/dropone.sock" --stdin <"$T/drop2.txt" >"$T/stdin_dropped.out" 2>"$T/stdin_dropped.err" || RC=$?
  expect stdin_dropped 2 '{"jsonrpc":"2.0","result":{"method":"a"},"id":1}' "no reply for id 2"
  RC=0
  timeout 30 "$JRPC" -u "$T/silent.sock" --timeout 500 --stdin <"$T/drop2.txt" >"$T/stdin_silent.out" 2>"$T/stdin_silent.err" || RC=$?
  expect stdin_silent 3 "" "timed out after 500 ms waiting for replies"
  expect_in stdin_silent err "no reply for id 2" || true
  for mode in "${pids[@]}"; do
    stop_bg "$mode"
  done
}

# The prompt, through a pty: completion of a method name (typed "math.a",
# Tab), the up arrow bringing the last line back, completion of a named
# param, the history file, NO_COLOR on a terminal; and colour on a
# terminal without it.
test_interactive() {
  start_fake discover
  local sock=$T/discover.sock
  if printf '%s\n' 'expect jrpc> ' 'send math.a\t1 2\r' 'expect {"method":"math.add","params":[1,2]}' \
    'expect jrpc> ' 'send \x1b[A\r' 'expect {"method":"math.add","params":[1,2]}' \
    'expect jrpc> ' 'send greet n\tbob\r' 'expect {"method":"greet","params":{"name":"bob"}}' \
    'expect jrpc> ' 'eof' |
    NO_COLOR=1 JRPC_HISTORY=$T/history timeout 60 python3 "$here/pty_session.py" "$JRPC" -u "$sock" --compact \
      >"$T/pty.out" 2>"$T/pty.err"; then
    pass "prompt: method and param completion, history recall"
  else
    fail "prompt: the pty session failed"
    show "$T/pty.err"
  fi
  check_sanitizer "$T/pty.out" "prompt: jrpc" || true
  # libedit's history file writes a space as \040.
  sed 's/\\040/ /g' "$T/history" >"$T/history.txt"
  if grep -qx 'math.add 1 2' "$T/history.txt" && grep -qx 'greet name=bob' "$T/history.txt"; then
    pass "prompt: history file written"
  else
    fail "prompt: the history file lacks the lines typed"
    show "$T/history"
  fi
  if printf '%s\n' 'expect jrpc> ' 'send ping\r' 'expect \x1b[32m"ping"' 'send quit\r' |
    JRPC_HISTORY='' timeout 60 python3 "$here/pty_session.py" "$JRPC" -u "$sock" >"$T/pty2.out" 2>"$T/pty2.err"; then
    pass "prompt: colour on a terminal"
  else
    fail "prompt: no colour on a terminal without NO_COLOR"
    show "$T/pty2.err"
  fi
  # help and ? are the prompt's own; call options start a line.
  if printf '%s\n' 'expect jrpc> ' 'send help\r' 'expect quit, exit, Ctrl-D' \
    'expect jrpc> ' 'send ?\r' 'expect Tab completes method names' \
    'expect jrpc> ' 'send -n ping\r' 'expect jrpc> ' \
    'send --id 7 -v --compact say hi\r' 'expect sending {"jsonrpc":"2.0","method":"say","params":["hi"],"id":7}' \
    'expect "hi"' 'expect jrpc> ' 'send -r say "two words"\r' 'expect two words\r\n' \
    'expect jrpc> ' 'send say x --compact\r' 'expect --compact after the method say: options go before it' \
    'expect (help lists what the prompt takes)' 'expect jrpc> ' 'send --bogus say\r' \
    "expect unrecognized option '--bogus'" 'expect jrpc> ' 'send -- help\r' 'expect "method": "help"' \
    'expect jrpc> ' 'send say 1\r' 'expect 1\r\n' 'expect jrpc> ' 'eof' |
    NO_COLOR=1 JRPC_HISTORY='' timeout 60 python3 "$here/pty_session.py" "$JRPC" -u "$sock" >"$T/pty4.out" 2>"$T/pty4.err"; then
    pass "prompt: help, ?, and call options on a line"
  else
    fail "prompt: help and call options"
    show "$T/pty4.err"
  fi
  # The notification (-n ping) got no reply printed, and the options of
  # one line did not stay for the next (say 1 is indented, not compact).
  if grep -q '"method": "\(ping\|-n\)"' "$T/pty4.out" || grep -q 'sending.*"params":\[1\]' "$T/pty4.out"; then
    fail "prompt: -n was not a notification, or -v stayed on"
    show "$T/pty4.out"
  else
    pass "prompt: -n sends a notification; a line's options are its own"
  fi
  # A server without rpc.discover: the prompt works, Tab completes nothing.
  if printf '%s\n' 'expect no rpc.discover: no completion' 'expect jrpc> ' 'send math.a\t\r' \
    'expect error -32601: Method not found' 'send quit\r' |
    NO_COLOR=1 JRPC_HISTORY='' timeout 60 python3 "$here/pty_session.py" "$JRPC" -u "$T/nodisc.sock" >"$T/pty3.out" 2>"$T/pty3.err"; then
    pass "prompt: without rpc.discover, no completion"
  else
    fail "prompt: against jrpcd without rpc.discover"
    show "$T/pty3.err"
  fi
  stop_bg "$BG_PID"
}

# The installed bash completion: method names through jrpc -l, then the
# method's param names through jrpc -d.
test_bash_completion() {
  start_fake discover
  local got
  # shellcheck disable=SC2016 # the inner script expands its own $1
  got=$(PATH="$T/root/bin:$PATH" JRPC_SOCKET=$T/discover.sock timeout 30 bash -c '
    source "$1"
    COMP_WORDS=(jrpc ma); COMP_CWORD=1; _jrpc; echo "${COMPREPLY[*]}"
    COMP_WORDS=(jrpc --com); COMP_CWORD=1; _jrpc; echo "${COMPREPLY[*]}"
    COMP_WORDS=(jrpc -u "$JRPC_SOCKET" g); COMP_CWORD=3; _jrpc; echo "${COMPREPLY[*]}"
    COMP_WORDS=(jrpc -u "$JRPC_SOCKET" greet ""); COMP_CWORD=4; _jrpc; echo "${COMPREPLY[*]}"
    COMP_WORDS=(jrpc --compact greet name=x l); COMP_CWORD=4; _jrpc; echo "${COMPREPLY[*]}"
    COMP_WORDS=(jrpc greet name=b); COMP_CWORD=2; _jrpc; echo "[${COMPREPLY[*]}]"
  ' _ "$T/root/share/bash-completion/completions/jrpc" 2>&1) || true
  if [[ $got == $'math.add\n--compact\ngreet\nname= loud= times=\nloud=\n[]' ]]; then
    pass "bash completion: methods, options and param names"
  else
    fail "bash completion: got: $got"
  fi
  stop_bg "$BG_PID"
}

# jrpc(1) documents every long option of cli/main.c and cli/callopts.c.
test_man_options() {
  local opt n=0 missing=0
  for opt in $(sed -n 's/^ *{"\([a-z-]*\)", [a-z_]*, NULL,.*/\1/p' "$ROOT/cli/main.c" "$ROOT/cli/callopts.c"); do
    n=$((n + 1))
    if ! grep -qF -- "\\-\\-${opt//-/\\-}" "$ROOT/man/jrpc.1"; then
      fail "jrpc.1 does not document --$opt (cli/main.c, cli/callopts.c)"
      missing=1
    fi
  done
  ((n > 10)) || fail "read only $n long options from cli/main.c: fix the extraction"
  ((missing)) || pass "jrpc.1 documents all $n long options of cli/main.c and cli/callopts.c"
}

main() {
  need_file "$JRPCD" jrpcd
  need_cmd python3
  need_cmd socat
  setup_tmp
  install_layout
  start_jrpcd ports_and_conf
  test_calls
  test_endpoints
  test_nothing_silent
  test_wait
  test_failures
  test_notify_batch_stdin
  test_discovery
  test_malformed
  test_interactive
  test_bash_completion
  test_man_options
  stop_daemon jrpcd "$JPID" "$T/jrpcd.sock"
  finish
}

main "$@"
