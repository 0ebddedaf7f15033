#!/usr/bin/env bash
# failures.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT JRPC (only JRPC runs)
#
# The connection failures jrpc explains (issue 25 point 3) that no other
# test provokes (jrpc.sh, http.sh, content_length.sh and tls_verify.sh
# cover the rest; the list is in tests/README.md), against fake_bytes.py's
# fixed replies: a reply that is not HTTP on an HTTP endpoint; each kind of
# malformed HTTP head and chunked body, each bound (status line, head,
# chunk size line, trailers) overrun; a length prefix, an HTTP
# Content-Length and a content-length head announcing more than jrpc takes;
# a content-length head without Content-Length or with a non-number; and,
# without a server, a port that is not a number, a socket path too long,
# and TLS client files that do not load (--cert not PEM, --key missing,
# not PEM or not the certificate's, --cert without a key in it). Each
# ends with exit status 2 and its message.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../../tests/cli/lib.sh
source "$here/../../tests/cli/lib.sh"
# shellcheck source-path=SCRIPTDIR source=jrpc_lib.sh
source "$here/jrpc_lib.sh"

jrpc_args "$@"

# reply NAME BYTES: what fake_bytes.py answers on $T/fb/NAME.sock
# (printf's escapes).
reply() {
  # shellcheck disable=SC2059 # the bytes are printf's format on purpose
  printf "$2" >"$T/fb/$1.reply"
}

# big_reply NAME PREFIX N SUFFIX: PREFIX, N bytes of "a", SUFFIX (Python
# string escapes).
big_reply() {
  python3 -c 'import sys; e = lambda t: t.encode().decode("unicode_escape").encode("latin-1"); sys.stdout.buffer.write(e(sys.argv[1]) + b"a" * int(sys.argv[2]) + e(sys.argv[3]))' \
    "$2" "$3" "$4" >"$T/fb/$1.reply"
}

# fails NAME FRAMING MESSAGE: jrpc -f FRAMING on NAME's socket exits 2
# saying "unix:SOCKET: MESSAGE".
fails() {
  run "$1" -u "$T/fb/$1.sock" -f "$2" --no-check ping
  expect "$1" 2 "" "unix:$T/fb/$1.sock: $3"
}

start_fake() {
  mkdir "$T/fb"
  : >"$T/fb/tcp_plain.reply"
  reply http_garbage 'SSH-2.0-OpenSSH_9.2\r\n'
  reply http_folded 'HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\n{}'
  reply http_noname 'HTTP/1.1 200 OK\r\n: x\r\nContent-Length: 2\r\n\r\n{}'
  reply http_lengths 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}'
  reply http_nan 'HTTP/1.1 200 OK\r\nContent-Length: two\r\n\r\n{}'
  reply http_gzip 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n{}'
  reply http_chunk_size 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n'
  reply http_chunk_long 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{}\r\n0\r\n\r\n'
  reply http_huge 'HTTP/1.1 200 OK\r\nContent-Length: 999999999\r\n\r\n{}'
  reply length_huge '\x7f\xff\xff\xff{}'
  reply cl_none 'Content-Type: application/json\r\n\r\n{}'
  reply cl_nan 'Content-Length: 2x\r\n\r\n{}'
  reply cl_huge 'Content-Length: 999999999\r\n\r\n{}'
  big_reply http_status_big 'HTTP/1.1 200 ' 70000 ''
  big_reply http_head_big 'HTTP/1.1 200 OK\r\nX-A: ' 70000 '\r\nContent-Length: 2\r\n\r\n{}'
  big_reply http_chunk_line 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1' 5000 ''
  big_reply http_trailers 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-A: ' 70000 '\r\n'
  big_reply cl_head_big 'Content-Length: 2\r\nX-A: ' 70000 '\r\n\r\n{}'
  python3 "$here/fake_bytes.py" "$T/fb" >"$T/fake.log" 2>&1 &
  FAKE=$!
  DAEMON_PIDS+=("$FAKE")
  local i
  for ((i = 0; i < 200; i++)); do
    [[ -e $T/fb/ready ]] && return 0
    alive "$FAKE" || break
    sleep 0.05
  done
  show "$T/fake.log"
  die "fake_bytes.py did not start"
}

test_replies() {
  fails http_garbage http "the reply is not HTTP (it begins SSH-2.0-OpenSSH_9.2\\x0d\\x0a): is the endpoint an http listener? (for a newline or length one: tcp://HOST:PORT, with -f length for length framing)"
  fails http_folded http "malformed HTTP reply: a header folded over two lines"
  fails http_noname http "malformed HTTP reply: a header line without a name"
  fails http_lengths http "malformed HTTP reply: two Content-Lengths that differ"
  fails http_nan http "malformed HTTP reply: a Content-Length that is not a number"
  fails http_gzip http "malformed HTTP reply: a Transfer-Encoding other than chunked"
  fails http_chunk_size http "malformed HTTP reply: a chunk size that is not hexadecimal"
  fails http_chunk_long http "malformed HTTP reply: a chunk longer than its size"
  fails http_huge http "the server announced a 999999999-byte reply (at most 268435456)"
  fails length_huge length "the server announced a 2147483647-byte reply (at most 268435456)"
  fails cl_none content-length "malformed content-length reply: a header block without Content-Length"
  fails cl_nan content-length "malformed content-length reply: a Content-Length that is not a number"
  fails cl_huge content-length "the server announced a 999999999-byte reply (at most 268435456)"
  fails http_status_big http "malformed HTTP reply: a status line over 64 KiB"
  fails http_head_big http "malformed HTTP reply: a head over 64 KiB"
  fails http_chunk_line http "malformed HTTP reply: a chunk size line over 4 KiB"
  fails http_trailers http "malformed HTTP reply: trailers over 64 KiB"
  fails cl_head_big content-length "malformed content-length reply: a header block over 64 KiB"
}

# Failures found before anything is sent: no server needed (a refused
# port is never reached).
test_local() {
  run port_name -t 127.0.0.1:http ping
  expect port_name 2 "" '"127.0.0.1:http" is not HOST:PORT (like 127.0.0.1:7400 or [::1]:7400; the port a number from 1 to 65535)'
  run port_big "tcp://127.0.0.1:99999" ping
  expect port_big 2 "" '"127.0.0.1:99999" is not HOST:PORT'
  local long
  long=$T/$(printf 'd%.0s' {1..120}).sock
  run path_long -u "$long" ping
  expect path_long 2 "" "socket path too long (at most 107 bytes): $long"
}

# TLS client files: checked once the TCP connection is made, before the
# handshake, so the fake's TCP port does.
test_client_files() {
  # A jrpc built with -DJRPC_TLS=OFF still lists the TLS options in its
  # help (they are refused when used): ask it.
  local probe
  probe=$(timeout 10 "$JRPC" tls://127.0.0.1:1 ping 2>&1 || true)
  if [[ $probe == *"built without TLS"* ]]; then
    echo "note: TLS client files not checked: this jrpc has no TLS"
    return 0
  fi
  need_cmd openssl
  local url
  url=tls://127.0.0.1:$(cat "$T/fb/tcp_plain.port")
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$T/k.pem" -out "$T/c.pem" -days 2 -subj /CN=a 2>/dev/null
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$T/k2.pem" -out "$T/c2.pem" -days 2 -subj /CN=b 2>/dev/null
  echo "not PEM" >"$T/garbage.pem"
  run cert_garbage --cafile "$T/c.pem" --cert "$T/garbage.pem" --key "$T/k.pem" "$url" ping
  expect cert_garbage 2 "" "--cert $T/garbage.pem: no PEM certificate in it (\"-----BEGIN CERTIFICATE-----\" is needed)"
  run key_missing --cafile "$T/c.pem" --cert "$T/c.pem" --key "$T/none.pem" "$url" ping
  expect key_missing 2 "" "--key $T/none.pem: No such file or directory"
  run key_garbage --cafile "$T/c.pem" --cert "$T/c.pem" --key "$T/garbage.pem" "$url" ping
  expect key_garbage 2 "" "--key $T/garbage.pem: no PEM private key in it"
  run key_other --cafile "$T/c.pem" --cert "$T/c.pem" --key "$T/k2.pem" "$url" ping
  expect key_other 2 "" "--key $T/k2.pem: not the key of --cert $T/c.pem"
  run key_none --cafile "$T/c.pem" --cert "$T/c.pem" "$url" ping
  expect key_none 2 "" "--cert $T/c.pem: no private key in it: give it with --key FILE"
}

main() {
  need_cmd python3
  setup_tmp
  umask 077
  start_fake
  test_replies
  test_local
  test_client_files
  kill "$FAKE"
  wait "$FAKE" 2>/dev/null || true
  forget_pid "$FAKE"
  finish
}

main "$@"
