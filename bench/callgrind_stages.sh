#!/usr/bin/env bash
# Instructions per request by stage of the request path, from two callgrind
# profiles of the same workload at two request counts (their difference,
# divided by the difference in requests: start-up cancels out). Each line
# of code counts where it is written, inlined or not (callgrind's file of
# the line), so a stage keeps its cost when the compiler moves it.
#
#   bench/callgrind_stages.sh LO.out HI.out REQUESTS
#       (REQUESTS: the hi run's requests minus the lo run's)
#   bench/callgrind_stages.sh pipeline BUILD WORKLOAD [PARSER]
#       runs bench_pipeline (2,000 and 12,000 requests; batches 10,000
#       and 60,000 calls) under callgrind first
#
# bench/callgrind_socket.sh keeps its profiles with CG_KEEP=DIR, named
# jrpcd.WORKLOAD.N and echo.WORKLOAD.N.
set -euo pipefail

if [ "${1:-}" = pipeline ]; then
  build=$2 wl=$3 parser=${4:-native}
  lo=2000 hi=12000
  case $wl in batch40) lo=8000 hi=48000 ;; batch100) lo=10000 hi=60000 ;; esac
  T=$(mktemp -d)
  trap 'rm -rf "$T"' EXIT
  for n in $lo $hi; do
    valgrind --tool=callgrind --callgrind-out-file="$T/cg.$n" \
      "$build/bench/bench_pipeline" --parser "$parser" --only "$wl" \
      --requests $n >/dev/null 2>&1
  done
  "$0" "$T/cg.$lo" "$T/cg.$hi" $((hi - lo))
  exit
fi

lo=$1 hi=$2 n=$3
# file:function and self instructions, per line of callgrind_annotate's
# function table (inlined code is listed under the file it comes from).
table() {
  callgrind_annotate --auto=no --inclusive=no --threshold=100 "$1" 2>/dev/null |
    awk '/^ *[0-9,]+ +(\([ 0-9.]+%\) +)?[^ ]+:[^ ]+/ {
      v = $1; gsub(",", "", v)
      f = $0; sub(/^ *[0-9,]+ +(\([ 0-9.]+%\) +)?/, "", f); sub(/ \[.*$/, "", f)
      print f "\t" v }'
}
stage() { # file:function -> stage
  awk -F'\t' '
  function st(f) {
    if (f ~ /read_envelope/) return "envelope"
    if (f ~ /parser_native|parser_jsmn|parser_simdjson|simdjson|jsmn|parser_auto|str_valid|num_valid|strspan|:span_|str_scan|intrin\.h:native_parse|arena\.h:native_parse|tokdoc\.h:native_parse|jsontext\.h:scan/) return "tokenizer"
    if (f ~ /(frame|stream)\.[ch]:|memchr/) return "framing"
    if (f ~ /request\.[ch]:/) return "request rules"
    if (f ~ /registry\.[ch]:/) return "registry"
    if (f ~ /dispatch\.c:|async\.c:/) return "dispatch"
    if (f ~ /writer\.[ch]:|bytescan|:crlf_|:special_/) return "writer"
    if (f ~ /handlers\/|math\.c|echo\.c|api\.c:|view\.h:|params\.c:|tokdoc\.[ch]:|jrpc\.h:|jsontext\.c:|num_to|num_text|:calc|read_operand|:operands|:echo/) return "handler via ABI"
    if (f ~ /outbuf\.[ch]:|arena\.[ch]:|bufpool\.[ch]:|memcpy|memmove|memset/) return "output, arena, copies"
    if (f ~ /\?\?\?:0x|asynccancel|libuv|uv_|uv__|daemon\/|conn\.c|worker\.c|epoll|writev|readv|read|write|send|recv|syscall|clock|pthread/) return "libuv, daemon, I/O"
    if (f ~ /dl-|rtld|ld-linux|_dl_/) return "(start-up)"
    if (f ~ /pipeline\.c/) return "(bench driver)"
    return "other"
  }
  { s[st($1)] += $2 }
  END { for (k in s) printf "%s\t%d\n", k, s[k] }'
}
join -t $'\t' -a 2 -e 0 -o 0,1.2,2.2 <(table "$lo" | stage | sort) <(table "$hi" | stage | sort) |
  awk -F'\t' -v n="$n" '
    { d[$1] = ($3 - $2) / n; tot += d[$1] }
    END {
      k = split("framing|tokenizer|envelope|request rules|registry|dispatch|handler via ABI|writer|output, arena, copies|libuv, daemon, I/O|other|(start-up)|(bench driver)", o, "|")
      for (i = 1; i <= k; i++) printf "%-24s %8.0f\n", o[i], d[o[i]]
      printf "%-24s %8.0f\n", "total", tot
    }'
