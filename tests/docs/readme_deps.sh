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
# refused, naming that package.
set -euo pipefail

root=${1:?usage: $0 REPO_ROOT}
fails=0

# The backquoted names after the colon of the README's list line whose
# text holds $2.
readme_list() {
  local readme=$1 tag=$2
  awk '/^<!-- deps:/ { on = 1; next } /^<!-- \/deps -->$/ { on = 0 } on' "$readme" |
    grep -F -- "$tag" | sed 's/^[^:]*: //' | grep -o '`[a-z0-9][a-z0-9.+-]*`' | tr -d '`' | sort
}

# check README DEPS_SH: prints every difference; status 1 if any.
check() {
  local readme=$1 deps=$2 list tag rc=0 in_readme in_deps p
  grep -q '^<!-- deps:' "$readme" && grep -q '^<!-- /deps -->$' "$readme" || {
    echo "$readme has no <!-- deps: ... --> ... <!-- /deps --> block"
    return 1
  }
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
sed '/^<!-- deps:/,/^<!-- \/deps -->$/ s/ `libuv1-dev`//' "$root/README.md" >"$T/README.md"
out=$(check "$T/README.md" "$root/scripts/deps.sh") && rc=0 || rc=$?
if ((rc == 1)) && [[ $out == *"libuv1-dev: in deps.sh's run list, not on the README's"* ]]; then
  echo "ok: a package missing from the README is named: $out"
else
  echo "FAIL: a README without libuv1-dev passed the check (status $rc: $out)" >&2
  fails=$((fails + 1))
fi
sed 's/^\(test_pkgs=(\)/\1jrpcd-extra-tool /' "$root/scripts/deps.sh" >"$T/deps.sh"
out=$(check "$root/README.md" "$T/deps.sh") && rc=0 || rc=$?
if ((rc == 1)) && [[ $out == *"jrpcd-extra-tool: in deps.sh's test list, not on the README's"* ]]; then
  echo "ok: a package added to deps.sh alone is named: $out"
else
  echo "FAIL: a deps.sh with one more package passed the check (status $rc: $out)" >&2
  fails=$((fails + 1))
fi

((fails == 0)) || exit 1
echo "readme_deps.sh: all checks passed"
