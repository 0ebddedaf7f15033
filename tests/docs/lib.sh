# lib.sh - what examples.sh and live_examples.sh share; sourced, not run:
# tests/cli/lib.sh's helpers, and their arguments.
# shellcheck shell=bash
# shellcheck source-path=SCRIPTDIR source=../cli/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh"

# docs_args "$@": JRPCD HANDLERS_DIR BUILD_DIR REPO_ROOT, as absolute paths
# in JRPCD, HANDLERS, BUILD and ROOT.
# shellcheck disable=SC2034 # set for the sourcing script
docs_args() {
  (($# == 4)) || die "usage: $0 JRPCD HANDLERS_DIR BUILD_DIR REPO_ROOT"
  JRPCD=$(realpath -e -- "$1") || die "jrpcd not found: $1"
  HANDLERS=$(realpath -e -- "$2") || die "handlers not found: $2"
  BUILD=$(realpath -e -- "$3") || die "build dir not found: $3"
  ROOT=$(realpath -e -- "$4") || die "repo root not found: $4"
}
