#!/usr/bin/env bash
# examples.sh JRPCD HANDLERS_DIR BUILD_DIR REPO_ROOT (the first two unused)
#
# Every fenced code block of README.md, docs/*.md and packaging/README.md
# is either run by a test or exempt, with a reason, in the one table below.
#
# A block is run by a test when it lies in a section
# "<!-- NAME: SCRIPT ... -->" ... "<!-- /NAME -->" where SCRIPT is a file
# of the tree that ctest runs (its name is in a CMakeLists.txt of tests/ or
# cli/tests/) and that names the section (holds the text NAME): the
# runners extract their sections by those markers, so a block moved out of
# its section, a marker renamed or a runner deleted fails here. Any other
# block must be a row of EXEMPT (by file and first line, so that a moved
# block keeps its row); a row that names no such block fails too, so the
# table cannot go stale.
#
# An exempt block needs what CI does not have (systemd as PID 1, a
# Kubernetes cluster, an installed package) or is the test command itself.
# Each row names the check done instead, as strong as CI allows (root on
# Debian 12, no systemd as PID 1), run here when CHECK is not "-":
#   unit FILE: the installed unit the line's `systemctl` names passes
#     `systemd-analyze verify` (cmake --install BUILD_DIR into a temporary
#     prefix, its manual pages on MANPATH);
#   status: the Status line in the block's comment, "serving M methods
#     from P plugins with W workers" (on W CPUs), is what the installed
#     jrpcd says it serves on the installed config (its listeners moved to
#     free places), with a worker per online CPU of this machine;
#   package: the .deb's file name has the project's version and dpkg's
#     architecture, tests/pkg/deb.sh (pkg_deb) configures with every -D of
#     the block's cmake line, and the packages its comment says the install
#     pulls are installable (`apt-get install --simulate`);
#   layout: the listing names exactly the files `cmake --install` lays
#     out (into a temporary prefix for /usr, whose etc/ takes /etc's
#     files); "DIR/a, b" names DIR/a and DIR/b, "DIR/x/a, y/b" DIR/x/a and
#     DIR/y/b, "{a,b}" both, and two spaces start a comment;
#   out_of_tree: the example folder the block copies exists with the
#     Makefile and CMakeLists.txt it builds with, and tests/pkg/deb.sh
#     builds that folder against a staged install and calls it.
#
# Then it shows that the check can fail, on copies of the docs: a block
# added outside any section, a section whose runner does not exist, and an
# exemption whose block is gone must each be refused, naming the block.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
docs_args "$@"

# FILE | FIRST LINE OF THE BLOCK | CHECK | REASON
EXEMPT=(
  'README.md|./scripts/run.sh    # install what building needs, build jrpcd and jrpc, serve in the foreground (Ctrl-C stops)|-|the two commands themselves: test.sh is what CI runs (and so runs this test); run.sh builds the tree, as ctest'"'"'s build does, then serves the built-in config, which docs_examples_live serves with the next-steps block run.sh prints (docs_readme_deps checks that it prints it)'
  'docs/install.md|cmake -S . -B build/deb -DCMAKE_INSTALL_PREFIX=/usr -DJRPC_TESTS=OFF -DJRPC_BENCH=OFF|package|builds the whole tree for /usr and installs the package into the system: pkg_deb builds it in a tree of its own and installs it into a staging root'
  'packaging/README.md|cmake -S . -B build/deb -DCMAKE_INSTALL_PREFIX=/usr -DJRPC_TESTS=OFF -DJRPC_BENCH=OFF|package|the same build as docs/install.md'"'"'s, which pkg_deb runs in a tree of its own'
  'docs/install.md|sudo systemctl enable --now jrpcd.service|unit|needs systemd as PID 1 and the package installed'
  'docs/install.md|sudo systemctl enable --now jrpcd.socket|unit|needs systemd as PID 1 and the package installed'
  'docs/install.md|systemctl status jrpcd.service          # Status: "serving 15 methods from 4 plugins with 2 workers" (on 2 CPUs)|status|needs systemd as PID 1 and the journal; jrpcd'"'"'s STATUS= and SIGHUP under systemd are tests/cli/activation.sh'"'"'s'
  'docs/handlers.md|cp -r examples/out-of-tree-handler ~/hello && cd ~/hello|out_of_tree|installs into the system'"'"'s plugin folder and reloads the installed service'
  'docs/scaling.md|readinessProbe:|-|a Kubernetes Pod spec fragment: CI has no cluster; the /health it probes is the curl examples'"'"' (cli_readme_curl) and its 503 while draining tests/scale'"'"'s'
  'docs/install.md|/var/log/jrpcd/access.log {|-|a logrotate entry for an installed service (systemctl kill needs systemd as PID 1): what it does, move the file then SIGUSR1, is tests/cli/accesslog.sh'"'"'s (400 calls over a mv and SIGUSR1, each in exactly one file)'
  'packaging/README.md|/usr/bin/jrpcd, jrpc|layout|a listing of installed files, not a command'
)

# blocks DOC_ROOT: one line per fenced block of the docs,
# "FILE<TAB>LINE<TAB>FIRST LINE<TAB>SECTION<TAB>SCRIPT" (SECTION and SCRIPT
# empty outside a section); a section left open or closed unopened, or a
# block not closed, is a line "error: WHAT" and status 1.
blocks() {
  local docroot=$1 f line n fence section script first start
  for f in "$docroot"/README.md "$docroot"/docs/*.md "$docroot"/packaging/README.md; do
    f=${f#"$docroot"/}
    [[ -f $docroot/$f ]] || continue
    n=0 fence='' section='' script='' start=0 first=''
    while IFS= read -r line || [[ -n $line ]]; do
      n=$((n + 1))
      if [[ -n $fence ]]; then
        if [[ $line =~ ^\ {0,3}(\`\`\`|~~~)[[:space:]]*$ && ${BASH_REMATCH[1]} == "$fence" ]]; then
          printf '%s\t%s\t%s\t%s\t%s\n' "$f" "$start" "$first" "$section" "$script"
          fence=''
        elif ((start == n - 1)); then
          first=$line
        fi
        continue
      fi
      if [[ $line =~ ^\ {0,3}(\`\`\`|~~~) ]]; then
        fence=${BASH_REMATCH[1]} start=$n first=''
      elif [[ $line =~ ^\<!--\ /([a-z0-9-]+)\ --\>$ ]]; then
        [[ ${BASH_REMATCH[1]} == "$section" ]] ||
          { echo "error: $f:$n: <!-- /${BASH_REMATCH[1]} --> closes no open section"; return 1; }
        section='' script=''
      elif [[ $line =~ ^\<!--\ ([a-z0-9-]+)(:\ ([^ ]+)|\ --\>$) ]]; then
        [[ -z $section ]] || { echo "error: $f:$n: a section opens inside section $section"; return 1; }
        section=${BASH_REMATCH[1]} script=${BASH_REMATCH[3]}
      fi
    done <"$docroot/$f"
    [[ -z $fence ]] || { echo "error: $f:$start: a code block is not closed"; return 1; }
    [[ -z $section ]] || { echo "error: $f: section $section is not closed"; return 1; }
  done
}

# check DOC_ROOT: every block run or exempt, every exemption used and with
# a reason; prints each problem, one a line, and returns 1 if there is any.
# Sets CHECKS to "CHECK<TAB>FILE<TAB>LINE" for every exempt block with a
# check.
check() {
  local docroot=$1 rc=0 f at first section script row key reason
  declare -A exempt=() seen=()
  CHECKS=()
  if ! blocks "$docroot" >"$T/blocks"; then
    grep '^error: ' "$T/blocks" | sed 's/^error: //'
    return 1
  fi
  for row in "${EXEMPT[@]}"; do
    IFS='|' read -r f first key reason <<<"$row"
    [[ -n $key && -n $reason ]] || { echo "EXEMPT row without a check (or -) and a reason: $row"; rc=1; }
    exempt["$f|$first"]="$key|$reason"
  done
  while IFS=$'\t' read -r f at first section script; do
    if [[ -n $section ]]; then
      if [[ -z $script ]]; then
        echo "$f:$at: section $section names no test that runs it"
        rc=1
      elif [[ ! -f $ROOT/$script ]]; then
        echo "$f:$at: section $section names $script, which does not exist"
        rc=1
      elif ! grep -qF -- "$section" "$ROOT/$script"; then
        echo "$f:$at: $script does not read section $section (no \"$section\" in it)"
        rc=1
      elif ! grep -rqF --include=CMakeLists.txt -- "${script##*/}" "$ROOT/tests" "$ROOT/cli/tests"; then
        echo "$f:$at: $script (section $section) is not a ctest test"
        rc=1
      fi
      continue
    fi
    row=${exempt["$f|$first"]:-}
    if [[ -z $row ]]; then
      echo "$f:$at: a code block no test runs and EXEMPT does not list: $first"
      rc=1
      continue
    fi
    seen["$f|$first"]=1
    [[ ${row%%|*} == - ]] || CHECKS+=("${row%%|*}"$'\t'"$f"$'\t'"$at")
  done <"$T/blocks"
  for key in "${!exempt[@]}"; do
    [[ -n ${seen[$key]:-} ]] || {
      echo "EXEMPT lists a block that is not there (or is in a section): ${key/|/: }"
      rc=1
    }
  done
  return $rc
}

# The text of the block of FILE at LINE (its fence line), without fences.
block_text() {
  awk -v at="$2" 'NR == at { on = 1; next } on && /^ ? ? ?(```|~~~)/ { exit } on' "$ROOT/$1"
}

# Installs BUILD into $T/root once.
install_build() {
  if [[ ! -d $T/root ]]; then
    timeout 120 cmake --install "$BUILD" --prefix "$T/root" >"$T/install.log" 2>&1 ||
      { show "$T/install.log"; die "cmake --install $BUILD failed"; }
  fi
}

check_unit() {
  local text unit prefix
  text=$(block_text "$1" "$2")
  unit=$(grep -o 'systemctl enable --now [a-z.]*' <<<"$text" | awk '{ print $4 }')
  [[ -n $unit ]] || { fail "$1:$2: no 'systemctl enable --now UNIT' in the block"; return; }
  command -v systemd-analyze >/dev/null || missing "systemd-analyze is not installed (package systemd)"
  install_build
  prefix=$T/root
  if MANPATH=$prefix/share/man: SYSTEMD_LOG_COLOR=0 systemd-analyze verify \
    "$prefix/lib/systemd/system/$unit" >"$T/verify.log" 2>&1 && [[ ! -s $T/verify.log ]]; then
    pass "$1:$2: systemd-analyze verify of the installed $unit: clean"
  else
    fail "$1:$2: systemd-analyze verify of the installed $unit"
    show "$T/verify.log"
  fi
}

check_status() {
  local text want prefix conf line got i
  text=$(block_text "$1" "$2")
  want=$(sed -nE 's/.*Status: "(serving [0-9]+ methods from [0-9]+ plugins with )([0-9]+) workers" \(on \2 CPUs\)$/\1/p' <<<"$text")
  [[ -n $want ]] || { fail "$1:$2: no Status: \"serving M methods from P plugins with W workers\" (on W CPUs) comment"; return; }
  want+="$(getconf _NPROCESSORS_ONLN) workers"
  install_build
  prefix=$T/root
  conf=$(find "$prefix" -name jrpcd.conf -path '*/etc/*' | head -n1)
  [[ -n $conf ]] || { fail "cmake --install put no etc/jrpcd/jrpcd.conf under $prefix"; return; }
  # Served with its listeners moved to this test's folder and free ports
  # (what the line counts does not depend on them).
  while IFS= read -r line; do
    case $line in
    'unix = '*) line="unix = $T/installed-${#line}.sock" ;;
    'tcp = '*) line="tcp = 127.0.0.1:$(free_port)" ;;
    esac
    printf '%s\n' "$line"
  done <"$conf" >"$T/installed.conf"
  "$prefix/bin/jrpcd" -c "$T/installed.conf" >"$T/status.out" 2>"$T/status.err" &
  PID=$!
  DAEMON_PIDS+=("$PID")
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    got=$(grep -o 'serving [0-9]* methods from [0-9]* plugins with [0-9]* workers' "$T/status.err") && break
    alive "$PID" || break
    sleep 0.05
  done
  stop_daemon status "$PID"
  if [[ $got == "$want" ]]; then
    pass "$1:$2: the installed config serves what the Status comment says: $got"
  else
    fail "$1:$2: the Status comment says \"$want\"; the installed jrpcd on the installed config: ${got:-no serving line}"
    show "$T/status.err"
  fi
}

check_package() {
  local text version arch flag deb pkgs
  text=$(block_text "$1" "$2")
  version=$(sed -nE 's/^project\(jrpcd VERSION ([0-9.]+).*/\1/p' "$ROOT/CMakeLists.txt")
  while read -r flag; do
    grep -qF -- "$flag" "$ROOT/tests/pkg/deb.sh" ||
      fail "$1:$2: tests/pkg/deb.sh does not configure with $flag, as the block does"
  done < <(grep -m1 '^cmake -S' <<<"$text" | grep -o -- '-D[A-Z_]*=[^ ]*')
  deb=$(grep -o 'jrpcd_[^ ]*\.deb' <<<"$text" | head -n1) || true
  if [[ $deb == *'<version>'* ]]; then
    pass "$1:$2: the package file is named by pattern: $deb"
  elif command -v dpkg >/dev/null; then
    arch=$(dpkg --print-architecture)
    expect_eq "$1:$2: the package file is jrpcd_VERSION_ARCH.deb" "$deb" "jrpcd_${version}_$arch.deb"
  else
    missing "dpkg is not installed"
  fi
  pkgs=$(sed -nE 's/.*# pulls (.*)$/\1/p' <<<"$text" | tr -d ,)
  [[ -z $pkgs ]] && return
  command -v apt-get >/dev/null || missing "apt-get is not installed"
  # shellcheck disable=SC2086 # a list of package names
  if apt-get install --simulate $pkgs >"$T/apt.log" 2>&1; then
    pass "$1:$2: apt-get install --simulate $pkgs"
  else
    fail "$1:$2: apt-get install --simulate $pkgs"
    show "$T/apt.log"
  fi
}

check_layout() {
  local line path first rest name dir listed
  install_build
  while IFS= read -r line; do
    path=${line%%  *}
    first=${path%%, *} rest=${path#"$first"}
    printf '%s\n' "$first"
    dir=${first%/*}
    while [[ $rest == ', '* ]]; do
      rest=${rest#, } name=${rest%%, *} rest=${rest#"$name"}
      if [[ $name == */* ]]; then printf '%s\n' "${dir%/*}/$name"; else printf '%s\n' "$dir/$name"; fi
    done
  done < <(block_text "$1" "$2") | while IFS= read -r path; do
    if [[ $path =~ ^(.*)\{([^}]*)\}(.*)$ ]]; then
      tr ',' '\n' <<<"${BASH_REMATCH[2]}" | sed "s#^#${BASH_REMATCH[1]}#; s#\$#${BASH_REMATCH[3]}#"
    else
      printf '%s\n' "$path"
    fi
  done | sed -E 's#^/usr/##; s#^/etc/#etc/#' | sort >"$T/listed"
  (cd "$T/root" && find . \( -type f -o -type l \) | sed 's#^\./##' | sort) >"$T/installed"
  listed=$(wc -l <"$T/listed")
  if ((listed > 0)) && cmp -s "$T/listed" "$T/installed"; then
    pass "$1:$2: the listing is what cmake --install lays out ($listed files)"
  else
    fail "$1:$2: the listing (-) and what cmake --install lays out (+) differ"
    diff -u "$T/listed" "$T/installed" | grep '^[-+][^-+]' >&2 || true
  fi
}

check_out_of_tree() {
  local dir
  dir=$(block_text "$1" "$2" | sed -nE 's/^cp -r ([^ ]+) .*/\1/p')
  if [[ -n $dir && -f $ROOT/$dir/Makefile && -f $ROOT/$dir/CMakeLists.txt ]] &&
    grep -qF -- "${dir##*/}" "$ROOT/tests/pkg/deb.sh"; then
    pass "$1:$2: $dir has its Makefile and CMakeLists.txt, and tests/pkg/deb.sh builds it"
  else
    fail "$1:$2: '$dir' lacks a Makefile or CMakeLists.txt, or tests/pkg/deb.sh does not build it"
  fi
}

setup_tmp
if check "$ROOT" >"$T/check.out"; then
  pass "all $(wc -l <"$T/blocks") code blocks of README.md, docs/*.md and packaging/README.md are run by a test or exempt (${#EXEMPT[@]} exemptions)"
else
  sed 's/^/FAIL: /' "$T/check.out" >&2
  FAILURES=$((FAILURES + 1))
fi
for c in "${CHECKS[@]}"; do
  IFS=$'\t' read -r key f at <<<"$c"
  "check_$key" "$f" "$at"
done

# The check can fail. On copies: refuse_copy WHAT WANT EDIT... copies the
# docs to $T/docs, runs EDIT there, then check must fail with WANT.
refuse_copy() {
  local what=$1 want=$2 out
  shift 2
  rm -rf "$T/docs" && mkdir -p "$T/docs/docs" "$T/docs/packaging"
  cp "$ROOT/README.md" "$T/docs/" && cp "$ROOT"/docs/*.md "$T/docs/docs/"
  cp "$ROOT/packaging/README.md" "$T/docs/packaging/"
  (cd "$T/docs" && "$@")
  if out=$(check "$T/docs"); then
    fail "$what: passed the check"
  elif [[ $out == *"$want"* ]]; then
    pass "$what: refused: $(grep -F -- "$want" <<<"$out" | head -n1)"
  else
    fail "$what: refused, but without \"$want\": $out"
  fi
}
# shellcheck disable=SC2016 # backquotes for the copy, not an expansion
refuse_copy "a block added to docs/protocol.md" \
  "docs/protocol.md:$(($(wc -l <"$ROOT/docs/protocol.md") + 2)): a code block no test runs" \
  sh -c 'printf "\n\`\`\`sh\njrpc new.example\n\`\`\`\n" >>docs/protocol.md'
refuse_copy "a section whose runner is gone" \
  "section socat-examples names tests/cli/readme_gone.sh, which does not exist" \
  sed -i 's#socat-examples: tests/cli/readme_socat.sh#socat-examples: tests/cli/readme_gone.sh#' README.md
refuse_copy "an exemption whose block is gone" \
  "EXEMPT lists a block that is not there (or is in a section): docs/scaling.md: readinessProbe:" \
  sed -i 's/^readinessProbe:$/readiness:/' docs/scaling.md
finish
