#!/usr/bin/env bash
# source_map.sh REPO_ROOT
#
# docs/architecture.md's source map (between "<!-- source-map -->" and
# "<!-- /source-map -->") names every source file of lib/, common/,
# daemon/, cli/ and handlers/ (.c, .h, .cpp) in backquotes. Fails when a
# file named there does not exist, or a source file is named nowhere in
# it, so the map cannot go stale silently.
set -euo pipefail

root=${1:?usage: $0 REPO_ROOT}
doc=$root/docs/architecture.md
[[ -f $doc ]] || { echo "FAIL: $doc not found" >&2; exit 1; }

map=$(awk '/^<!-- source-map -->$/ { on = 1; seen = 1; next }
           /^<!-- \/source-map -->$/ { on = 0; closed = 1; next }
           on
           END { if (!seen || !closed) exit 2 }' "$doc") ||
  { echo "FAIL: $doc has no <!-- source-map --> ... <!-- /source-map --> block" >&2; exit 1; }

# Every backquoted path of the map that looks like a file of the tree.
mapfile -t named < <(grep -o '`[A-Za-z0-9_./-]*\.\(c\|h\|cpp\)`' <<<"$map" | tr -d '`' | sort -u)
((${#named[@]} > 0)) || { echo "FAIL: the source map names no files" >&2; exit 1; }

fails=0
declare -A in_map=()
for f in "${named[@]}"; do
  in_map[$f]=1
  if [[ ! -f $root/$f ]]; then
    echo "FAIL: docs/architecture.md's source map names $f, which does not exist" >&2
    fails=$((fails + 1))
  fi
done

mapfile -t present < <(cd "$root" && find lib common daemon cli handlers -type f \
  \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) | sort)
((${#present[@]} > 0)) || { echo "FAIL: no source files found under $root" >&2; exit 1; }
for f in "${present[@]}"; do
  if [[ -z ${in_map[$f]:-} ]]; then
    echo "FAIL: $f is missing from docs/architecture.md's source map" >&2
    fails=$((fails + 1))
  fi
done

((fails == 0)) || exit 1
echo "PASS: docs/architecture.md's source map names all ${#present[@]} source files, and only files that exist"
