#!/usr/bin/env bash
# readme_deps.sh REPO_ROOT
#
# The README's dependency list (between "<!-- deps: ... -->" and
# "<!-- /deps -->") against scripts/deps.sh, the one list that is
# installed: its line for run.sh must name exactly the packages of
# `deps.sh --list run`, its line for test.sh exactly those of
# `deps.sh --list test`. A package in one and not the other, or on the
# wrong line, fails with its name. Then shows that the check can fail: a
# README with a package missing and a deps.sh with one more must each be
# refused, naming that package. Last, the commands scripts/run.sh prints
# to try next must be the README's block that says so, line for line.
set -euo pipefail

root=${1:?usage: $0 REPO_ROOT}
fails=0

# The backquoted names after the colon of the README's list line whose
# text holds $2.
readme_list() {
  local readme=$1 tag=$2
  # shellcheck disable=SC2016 # backquotes, not an expansion
  awk '/^<!-- deps:/ { on = 1; next } /^<!-- \/deps -->$/ { on = 0 } on' "$readme" |
    grep -F -- "$tag" | sed 's/^[^:]*: //' | grep -o '`[a-z0-9][a-z0-9.+-]*`' | tr -d '`' | sort
}

# check README DEPS_SH: prints every difference; status 1 if any.
check() {
  local readme=$1 deps=$2 list tag rc=0 in_readme in_deps p
  if ! grep -q '^<!-- deps:' "$readme" || ! grep -q '^<!-- /deps -->$' "$readme"; then
    echo "$readme has no <!-- deps: ... --> ... <!-- /deps --> block"
    return 1
  fi
  for list in run test; do
    tag="(\`$list.sh\`)"
    in_readme=$(readme_list "$readme" "$tag")
    in_deps=$(bash "$deps" --list "$list" | sort)
    [[ -n $in_deps ]] || { echo "deps.sh --list $list printed nothing"; rc=1; }
    [[ -n $in_readme ]] || { echo "the README has no line for $tag"; rc=1; }
    for p in $(comm -23 <(echo "$in_deps") <(echo "$in_readme")); do
      echo "$p: in deps.sh's $list list, not on the README's $tag line"
      rc=1
    done
    for p in $(comm -13 <(echo "$in_deps") <(echo "$in_readme")); do
      echo "$p: on the README's $tag line, not in deps.sh's $list list"
      rc=1
    done
  done
  return $rc
}

if out=$(check "$root/README.md" "$root/scripts/deps.sh"); then
  echo "ok: the README's dependency lists are deps.sh's"
else
  printf 'FAIL: %s\n' "${out//$'\n'/$'\nFAIL: '}" >&2
  fails=$((fails + 1))
fi

# Drift, both ways, on copies.
T=$(mktemp -d)
trap 'rm -rf -- "$T"' EXIT
# expect_drift WHAT README DEPS_SH WANT: check must refuse the pair with
# WANT in its message.
expect_drift() {
  local what=$1 want=$4 out rc=0
  out=$(check "$2" "$3") || rc=$?
  if ((rc == 1)) && [[ $out == *"$want"* ]]; then
    echo "ok: $what is named: $out"
  else
    echo "FAIL: $what passed the check (status $rc: $out)" >&2
    fails=$((fails + 1))
  fi
}
# shellcheck disable=SC2016 # backquotes, not an expansion
sed '/^<!-- deps:/,/^<!-- \/deps -->$/ s/ `libuv1-dev`//' "$root/README.md" >"$T/README.md"
expect_drift "libuv1-dev missing from the README" "$T/README.md" "$root/scripts/deps.sh" \
  "libuv1-dev: in deps.sh's run list, not on the README's"
sed 's/^\(test_pkgs=(\)/\1jrpcd-extra-tool /' "$root/scripts/deps.sh" >"$T/deps.sh"
expect_drift "a package added to deps.sh alone" "$root/README.md" "$T/deps.sh" \
  "jrpcd-extra-tool: in deps.sh's test list, not on the README's"

# run.sh's next steps: the indented lines of its message, $PWD as the
# README writes it; the README's: the sh block after "It prints what to try
# next".
mapfile -t printed < <(awk '/^cat >&2 <<EOF$/ { on = 1; next } /^EOF$/ { on = 0 }
  on && /^  / { sub(/^  /, ""); gsub(/\\\$/, "$"); print }' "$root/scripts/run.sh")
mapfile -t shown < <(awk '/It prints what to try next/ { want = 1 }
  want && /^```sh$/ { on = 1; next } on && /^```$/ { exit } on' "$root/README.md")
if ((${#printed[@]} > 0)) && [[ "${printed[*]}" == "${shown[*]}" ]]; then
  echo "ok: run.sh prints the README's next steps (${#printed[@]} lines)"
else
  echo "FAIL: run.sh's next steps differ from the README's:" >&2
  printf '  run.sh: %s\n' "${printed[@]}" >&2
  printf '  README: %s\n' "${shown[@]}" >&2
  fails=$((fails + 1))
fi

((fails == 0)) || exit 1
echo "readme_deps.sh: all checks passed"
