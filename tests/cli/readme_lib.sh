# readme_lib.sh - running a README.md section of shell examples verbatim;
# sourced by readme_socat.sh and readme_curl.sh after lib.sh, which set
# README, PORT and SKIP. Not run by itself.
# shellcheck shell=bash

declare -a CMDS=() WANTS=()

# Fills CMDS and WANTS from the README section between "<!-- $MARKER" and
# "<!-- /$MARKER -->"; dies when the section is malformed.
parse_examples() {
  local line state=before n=0 lineno=0 cur=-1
  while IFS= read -r line || [[ -n "$line" ]]; do
    lineno=$((lineno + 1))
    case $state in
    before)
      if [[ "$line" == "<!-- $MARKER"* ]]; then
        state=between
      fi
      ;;
    between)
      if [[ "$line" == "<!-- /$MARKER -->"* ]]; then
        state=after
        break
      elif [[ "$line" == '```sh' ]]; then
        state=block
        n=$((n + 1))
        cur=-1
      elif [[ "$line" == '```'* ]]; then
        die "README.md:$lineno: a code block in the $MARKER blocks that is not \`\`\`sh (is the '<!-- /$MARKER -->' marker missing?)"
      fi
      ;;
    block)
      if [[ "$line" == '```' ]]; then
        ((cur >= 0)) || die "README.md:$lineno: a \`\`\`sh block without a \"\$ \" command line"
        state=between
      elif [[ "$line" == '$ '* ]]; then
        CMDS+=("${line#'$ '}")
        WANTS+=("")
        cur=$((${#CMDS[@]} - 1))
      elif ((cur < 0)); then
        die "README.md:$lineno: output before any \"\$ \" command: $line"
      else
        WANTS[cur]+="$line"$'\n'
      fi
      ;;
    esac
  done <"$README"
  case $state in
  before) die "README.md has no '<!-- $MARKER' marker" ;;
  between) die "README.md has no '<!-- /$MARKER -->' marker after the examples" ;;
  block) die "README.md: a \`\`\`sh block in the $MARKER blocks is not closed" ;;
  esac
  ((n > 0)) || die "README.md: no \`\`\`sh blocks between the $MARKER markers"
  pass "README.md: ${#CMDS[@]} commands in $n blocks"
}

# Exit 77 (ctest: skipped) when something already listens on the port.
require_free_port() {
  local busy=""
  if command -v ss >/dev/null 2>&1 &&
    [[ -n "$(ss -Hltn "sport = :$PORT" 2>/dev/null)" ]]; then
    busy="ss lists a listener"
  elif timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT" 2>/dev/null; then
    busy="a connection succeeded"
  fi
  if [[ -n "$busy" ]]; then
    echo "SKIP: 127.0.0.1:$PORT is in use ($busy); the README examples need that port"
    exit "$SKIP"
  fi
}

# Runs every command with bash as written, in an environment where
# ${XDG_RUNTIME_DIR:-/tmp} is this test's directory.
run_examples() {
  local i rc
  for i in "${!CMDS[@]}"; do
    printf '%s' "${WANTS[i]}" >"$T/want.$i"
    rc=0
    XDG_RUNTIME_DIR=$T timeout 20 bash -c "${CMDS[i]}" >"$T/got.$i" 2>"$T/stderr.$i" || rc=$?
    if ((rc != 0)); then
      fail "example $((i + 1)) exited with status $rc: ${CMDS[i]}"
      show "$T/stderr.$i"
    fi
    if cmp -s "$T/want.$i" "$T/got.$i"; then
      pass "example $((i + 1)): ${CMDS[i]}"
    else
      fail "example $((i + 1)) printed something else than README.md shows: ${CMDS[i]}"
      diff -u --label README.md --label actual "$T/want.$i" "$T/got.$i" >&2 || true
    fi
  done
}

