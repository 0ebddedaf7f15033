#!/usr/bin/env bash
# man/check.sh [MAN_DIR [REPO_ROOT [JRPCD]]] - checks the manual pages jrpcd.8
# and jrpcd.conf.5 (JRPCD, the built daemon, defaults to $JRPCD):
#
#  1. they are ASCII, use \- (not a bare -) for option dashes, and render
#     with man -l (man-db) and with groff -ww without a single warning, in
#     lines of at most 80 columns, with no word hyphenated;
#  2. they document what the code has, so that they cannot go stale
#     silently:
#     - every key of the key table (daemon/config_keys.c, as
#       `jrpcd --list-keys` prints it: [server], [listen NAME] and the keys
#       of [plugin NAME] jrpcd reads itself) is the tag of a .TP paragraph
#       under the .SH heading of its section in jrpcd.conf.5, and no other
#       key is documented there;
#     - that paragraph states the key's range as the table has it ("from 1
#       to 1000000") and its default ("default 1000"; "yes on unix" for a
#       default that depends on the listener kind), except a default that
#       is a path, which the build sets;
#     - every option letter of daemon/main.c's getopt string is the tag of
#       a .TP paragraph under OPTIONS in jrpcd.8, and is in its SYNOPSIS,
#       and so is every long option of its getopt_long table;
#     - every key of conf/jrpcd.conf, set ("key = value") or documented in
#       a comment ("# key = ...", ";key = ..."), is documented in
#       jrpcd.conf.5: jrpcd's own keys as tags of their section, the keys a
#       plugin reads itself (max_ms of [plugin sleep]) at least in the text;
#       and every key of the table is in conf/jrpcd.conf.
#
# Every failure is listed; the exit status is 1 if there was any. Needs
# man-db's man and groff (Debian: man-db, groff-base). ctest runs it as the
# test man_pages (man/CMakeLists.txt).
set -euo pipefail

man_dir=${1:-$(dirname "$0")}
root=${2:-$man_dir/..}
page8=$man_dir/jrpcd.8
page5=$man_dir/jrpcd.conf.5
main_c=$root/daemon/main.c
conf=$root/conf/jrpcd.conf
jrpcd=${3:-${JRPCD:-}}

for f in "$page8" "$page5" "$main_c" "$conf"; do
  if [[ ! -r $f ]]; then
    echo "man/check.sh: cannot read $f (usage: check.sh [MAN_DIR [REPO_ROOT [JRPCD]]])" >&2
    exit 1
  fi
done
if [[ -z $jrpcd || ! -x $jrpcd ]]; then
  echo "man/check.sh: needs the built jrpcd for its key table: pass it as the" \
    "third argument or in \$JRPCD (got \"$jrpcd\")" >&2
  exit 1
fi

missing=()
if ! command -v man >/dev/null || ! man --version 2>/dev/null | grep -q '^man [0-9]'; then
  missing+=(man-db)
fi
command -v groff >/dev/null || missing+=(groff-base)
if ((${#missing[@]})); then
  echo "man/check.sh: needs man-db's man and groff; install the Debian" \
    "package(s): apt-get install ${missing[*]}" >&2
  exit 1
fi

export LC_ALL=C.UTF-8
# man-db's sandbox is no use for our own pages, and fails in some containers.
export MAN_DISABLE_SECCOMP=1
unset MANOPT MANROFFOPT MANPAGER PAGER GROFF_TMAC_PATH || true

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failures=0
fail() {
  printf 'FAIL: %s\n' "$1" >&2
  failures=$((failures + 1))
}
# Indents what a failed check printed, under its FAIL line.
show() { sed 's/^/    /' "$1" >&2; }

# ---------------------------------------------------------------------------
# 1. Rendering
# ---------------------------------------------------------------------------
for page in "$page8" "$page5" "$man_dir/jrpc.1"; do
  name=${page##*/}

  if LC_ALL=C grep -n '[^[:print:]]' "$page" >"$tmp/err"; then
    fail "$name: not ASCII (write roff escapes such as \\(em instead):"
    show "$tmp/err"
  fi
  # A bare '-' is a hyphen, which UTF-8 output may render as U+2010: an
  # option or a command typed from it would not work.
  if grep -nE '^[^.]|^\.[A-Z]' "$page" | grep -v '^[0-9]*:\.\\"' |
    grep -E '(^[0-9]+:|[[:space:]([])-[A-Za-z-]' >"$tmp/err"; then
    fail "$name: a bare '-' before an option or word start (write \\-):"
    show "$tmp/err"
  fi

  # man-db 2.11's plain --warnings passes groff only -wmac (undefined
  # macros); --warnings=w becomes -ww, every warning troff has.
  if ! MANWIDTH=80 man --warnings=w -E UTF-8 -l "$page" >"$tmp/out" 2>"$tmp/err"; then
    fail "$name: man -l failed:"
    show "$tmp/err"
  elif [[ -s $tmp/err ]]; then
    fail "$name: man --warnings=w -l warns:"
    show "$tmp/err"
  fi
  if ! grep -q '^NAME' "$tmp/out"; then
    fail "$name: man -l rendered no NAME section"
  fi
  # U+2010: a word groff broke at a line end (a key name split in two).
  if grep -n $'\xe2\x80\x90' "$tmp/out" >"$tmp/err"; then
    fail "$name: a word hyphenated at a line break (U+2010; the page must keep .nh and HY 0):"
    show "$tmp/err"
  fi
  if grep -n '^.\{81,\}' "$tmp/out" >"$tmp/err"; then
    fail "$name: rendered lines wider than 80 columns (MANWIDTH=80):"
    show "$tmp/err"
  fi

  if ! groff -man -ww -z -t "$page" 2>"$tmp/err" || [[ -s $tmp/err ]]; then
    fail "$name: groff -man -ww -z -t warns:"
    show "$tmp/err"
  fi
done

# ---------------------------------------------------------------------------
# 2. Content against the code
# ---------------------------------------------------------------------------

# tags PAGE: "HEADING<TAB>TAG" for every .TP paragraph: the lower-cased .SH
# heading it is under, and the first word of its tag line without fonts,
# quotes or the "= value" part ("workers" of '.BI "workers = " n', "-c" of
# '.BI \-c " file"').
tags() {
  awk '
    /^\.SH/ { h = tolower($0); sub(/^\.sh[ \t]*/, "", h); gsub(/"/, "", h); next }
    /^\.TP/ { want = 1; next }
    want && /^\.\\"/ { next }
    want {
      want = 0
      t = $0
      sub(/^\.[A-Za-z]+[ \t]*/, "", t)
      gsub(/\\f(\[[A-Za-z]*\]|\(..|.)/, "", t)
      gsub(/\\-/, "-", t)
      gsub(/\\&|\\%|"/, "", t)
      sub(/^[ \t]+/, "", t)
      split(t, w, /[ \t=]+/)
      print h "\t" w[1]
    }' "$1"
}

# section_tags KIND: the tags of jrpcd.conf.5 under the .SH heading that
# names the section KIND ("[server]", "[listen NAME]", "[plugin NAME]").
section_tags() {
  awk -F '\t' -v kind="$1" '
    ((kind == "server" || kind == "cluster") && index($1, "[" kind "]")) ||
    (kind != "server" && kind != "cluster" && index($1, "[" kind " ")) { print $2 }' "$tmp/tags5"
}

# in_list WORD LIST...: whether WORD is one of LIST.
in_list() {
  local w=$1 x
  shift
  for x; do [[ $x == "$w" ]] && return 0; done
  return 1
}

tags "$page5" >"$tmp/tags5"
tags "$page8" >"$tmp/tags8"

# The key table: SECTION<TAB>KEY<TAB>KINDS<TAB>TAKES<TAB>DEFAULT<TAB>DOC.
if ! "$jrpcd" --list-keys >"$tmp/keys" 2>"$tmp/err"; then
  fail "$jrpcd --list-keys failed:"
  show "$tmp/err"
fi
grep -v '^#' "$tmp/keys" >"$tmp/keys.tsv" || true
keys_of() { awk -F '\t' -v s="$1" '$1 == s { print $2 }' "$tmp/keys.tsv"; }
mapfile -t server_keys < <(keys_of server)
mapfile -t listen_keys < <(keys_of listen)
mapfile -t plugin_keys < <(keys_of plugin)
mapfile -t cluster_keys < <(keys_of cluster)
for kind in server listen plugin cluster; do
  arr="${kind}_keys[@]"
  found=("${!arr}")
  if ((${#found[@]} == 0)); then
    fail "jrpcd --list-keys lists no [$kind] key: fix it or the extraction in man/check.sh"
  fi
done

for kind in server listen plugin cluster; do
  arr="${kind}_keys[@]"
  keys=("${!arr}")
  mapfile -t documented < <(section_tags "$kind")
  for k in "${keys[@]}"; do
    in_list "$k" "${documented[@]}" ||
      fail "jrpcd.conf.5: key \"$k\" of [$kind] (daemon/config_keys.c) is not documented (a .TP tagged '$k = ...' under the .SH of [$kind])"
  done
  for k in "${documented[@]}"; do
    in_list "$k" "${keys[@]}" ||
      fail "jrpcd.conf.5: documents \"$k\" under [$kind], which daemon/config_keys.c does not have"
  done
done

# The paragraph of each key, as text: "SECTION<TAB>KEY<TAB>TEXT", from the
# page rendered without line breaks within paragraphs (a .TP tag at 7
# columns, its paragraph on the next line at 14).
groff -man -t -Tutf8 -rHY=0 -rLL=5000n -P-cbou "$page5" 2>/dev/null | awk '
  /^[^ ]/ { h = tolower($0); sec = h ~ /\[server\]/ ? "server" : h ~ /^\[listen / ? "listen" : h ~ /^\[plugin / ? "plugin" : ""; next }
  /^       [a-z_]+ = / { key = $1; next }
  key != "" && /^              [^ ]/ { sub(/^ +/, ""); print sec "\t" key "\t" $0; key = "" }
  /^$/ { next }' >"$tmp/paras"
while IFS=$'\t' read -r sec key _kinds takes def _doc; do
  text=$(awk -F '\t' -v s="$sec" -v k="$key" '$1 == s && $2 == k { print tolower($3) }' "$tmp/paras")
  [[ -n $text ]] || continue # not documented: reported above
  if [[ $takes =~ ([0-9]+)\ \.\.\ ([0-9]+) ]]; then
    range="from ${BASH_REMATCH[1]} to ${BASH_REMATCH[2]}"
    [[ $text == *"$range"* ]] ||
      fail "jrpcd.conf.5: [$sec] $key: the paragraph does not say \"$range\" (the range of daemon/config_keys.c)"
  fi
  case $def in
  - | /*) ;; # none, or a path the build sets
  *:*)
    IFS=, read -ra per_kind <<<"$def"
    for kd in "${per_kind[@]}"; do
      want="${kd#*:} on ${kd%%:*}"
      [[ $text == *"${want,,}"* ]] ||
        fail "jrpcd.conf.5: [$sec] $key: the paragraph does not say \"$want\" (its default on ${kd%%:*} listeners in daemon/config_keys.c)"
    done
    ;;
  *)
    [[ $text == *"default ${def,,}"* ]] ||
      fail "jrpcd.conf.5: [$sec] $key: the paragraph does not say \"default $def\" (the default of daemon/config_keys.c)"
    ;;
  esac
done <"$tmp/keys.tsv"

# Option letters: getopt(argc, argv, "c:tVh").
optstring=$(sed -n 's/.*getopt\(_long\)\{0,1\}([^"]*"\([^"]*\)".*/\2/p' "$main_c")
if [[ -z $optstring || $(wc -l <<<"$optstring") -ne 1 ]]; then
  fail "daemon/main.c: expected one getopt(argc, argv, \"...\") call, found: ${optstring:-none}"
fi
# Long options: the names of its "struct option" table, {"list-keys", ...}.
mapfile -t long_options < <(grep -o '{"[a-z][a-z-]*", *[a-z_]*argument' "$main_c" |
  sed 's/{"\([^"]*\)".*/\1/' || true)
letters=$(tr -d ':\n' <<<"$optstring" | fold -w1)
mapfile -t options < <(awk -F '\t' '$1 == "options" { print $2 }' "$tmp/tags8")
synopsis=$(awk '/^\.SH/ { on = ($0 ~ /^\.SH[ \t]+"?SYNOPSIS/); next } on' "$page8")
for l in $letters; do
  in_list "-$l" "${options[@]}" ||
    fail "jrpcd.8: option -$l (getopt in daemon/main.c) is not documented (a .TP tagged '\\-$l' under OPTIONS)"
  grep -qF -- "\\-$l" <<<"$synopsis" ||
    fail "jrpcd.8: option -$l (getopt in daemon/main.c) is not in the SYNOPSIS"
done
for l in "${long_options[@]}"; do
  in_list "--$l" "${options[@]}" ||
    fail "jrpcd.8: option --$l (daemon/main.c) is not documented (a .TP tagged '\\-\\-$l' under OPTIONS)"
  sed 's/\\-/-/g' <<<"$synopsis" | grep -qF -- "--$l" ||
    fail "jrpcd.8: option --$l (daemon/main.c) is not in the SYNOPSIS"
done
for o in "${options[@]}"; do
  if [[ $o == --* ]]; then
    in_list "${o#--}" "${long_options[@]}" ||
      fail "jrpcd.8: documents $o, which daemon/main.c does not have"
    continue
  fi
  [[ $o == -? ]] || fail "jrpcd.8: OPTIONS has a paragraph tagged \"$o\", not an option"
  [[ $letters == *"${o#-}"* ]] ||
    echo "note: jrpcd.8 documents $o, which daemon/main.c's getopt string \"$optstring\" lacks (yet)" >&2
done

# conf/jrpcd.conf: "SECTION<TAB>KEY" for every key set or shown in a comment.
# The section is the last header, or the last "# [kind ...]" heading in a
# comment (its keys are described before the section's first header).
awk '
  function kind(s) {
    s = tolower(s)
    if (s ~ /^\[server\]/) return "server"
    if (s ~ /^\[listen[ \t]/) return "listen"
    if (s ~ /^\[plugin[ \t]/) return "plugin"
    if (s ~ /^\[cluster\]/) return "cluster"
    return ""
  }
  /^[ \t]*\[/ { s = $0; sub(/^[ \t]*/, "", s); k = kind(s); sec = k; next }
  /^[#;][ \t]*\[/ { s = $0; sub(/^[#;][ \t]*/, "", s); k = kind(s); if (k != "") sec = k; next }
  /^[ \t]*[a-z_][a-z0-9_]*[ \t]*=/ || /^[#;][ \t]*[a-z_][a-z0-9_]*[ \t]*=[ \t]/ {
    s = $0; sub(/^[#; \t]*/, "", s); sub(/[ \t]*=.*/, "", s); print sec "\t" s
  }' "$conf" | sort -u >"$tmp/confkeys"
if [[ ! -s $tmp/confkeys ]]; then
  fail "conf/jrpcd.conf: no keys found: fix the extraction in man/check.sh"
fi
# The page as plain text, without hyphenation or line breaks within
# paragraphs, for keys that need only be mentioned.
if ! groff -man -t -Tutf8 -rHY=0 -rLL=5000n -P-cbou "$page5" >"$tmp/text5" 2>/dev/null; then
  fail "jrpcd.conf.5: groff cannot render it as plain text"
fi
while IFS=$'\t' read -r sec key; do
  case $sec in
  server | listen | cluster) own=1 ;;
  plugin) if in_list "$key" "${plugin_keys[@]}"; then own=1; else own=0; fi ;;
  *) own=0 ;;
  esac
  if ((own)); then
    mapfile -t documented < <(section_tags "$sec")
    in_list "$key" "${documented[@]}" ||
      fail "jrpcd.conf.5: key \"$key\" of [$sec] (conf/jrpcd.conf) is not documented (a .TP tagged '$key = ...' under the .SH of [$sec])"
  else
    grep -qw -- "$key" "$tmp/text5" ||
      fail "jrpcd.conf.5: \"$key\" (conf/jrpcd.conf${sec:+, [$sec]}) does not appear in the page"
  fi
done <"$tmp/confkeys"

# And the other way: every key of the table is in conf/jrpcd.conf, set or
# shown in a comment under its section.
while IFS=$'\t' read -r sec key _; do
  grep -qxF "$sec"$'\t'"$key" "$tmp/confkeys" ||
    fail "conf/jrpcd.conf: key \"$key\" of [$sec] (daemon/config_keys.c) is neither set nor shown (\"# $key = ...\") under a [$sec] section"
done <"$tmp/keys.tsv"

nkeys=$((${#server_keys[@]} + ${#listen_keys[@]} + ${#plugin_keys[@]} + ${#cluster_keys[@]}))
if ((failures)); then
  echo "man/check.sh: $failures failure(s)" >&2
  exit 1
fi
echo "man pages OK: render cleanly; $nkeys config keys, options \"$optstring\" and $(wc -l <"$tmp/confkeys") conf/jrpcd.conf keys documented"
