#!/usr/bin/env bash
# install.sh - `cmake --install BUILD --prefix DIR` gives an installation
# that lives in DIR alone, though BUILD was configured for another prefix
# (/usr/local by default):
#
#  1. installs BUILD into a fresh temporary prefix;
#  2. the installed jrpcd's default plugin_dir (jrpcd -T) and the plugins
#     its built-in config loads (jrpcd -t, no -c) are the prefix's;
#  3. the installed systemd units start the prefix's jrpcd on the prefix's
#     config and name no other jrpcd or config;
#  4. the installed pkg-config file gives the prefix's header and plugin
#     folder;
#  5. the installed jrpcd serves a config that names plugins without a
#     plugin_dir from the prefix's handlers and answers math.add;
#  6. the installation moved as a whole (mv) finds its handlers in the new
#     place.
#
#   install.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
# shellcheck source=tests/cli/lib.sh
source "$src/tests/cli/lib.sh"
for c in cmake socat pkg-config timeout realpath; do
  need_cmd "$c"
done
need_file "$build/daemon/jrpcd" "the built jrpcd"
setup_tmp

prefix=$T/prefix
cmake --install "$build" --prefix "$prefix" >"$T/install.log" 2>&1 ||
  { show "$T/install.log"; die "cmake --install $build --prefix $prefix failed"; }
JRPCD=$prefix/bin/jrpcd
need_file "$JRPCD" "the installed jrpcd"
handlers=$prefix/lib/jrpcd/handlers
need_file "$handlers/math.so" "the installed math handler"
# The built-in config's socket goes here, not into the caller's runtime
# directory.
export XDG_RUNTIME_DIR=$T/run
mkdir -m 0700 "$XDG_RUNTIME_DIR"

# 2. The default plugin_dir, and the built-in config's plugins.
run_jrpcd dump -T
expect_eq "-T: the default plugin_dir is the prefix's" \
  "$(sed -nE 's/^plugin_dir = (.*[^ ]) *; default$/\1/p' "$T/dump.out")" "$handlers"
run_jrpcd builtin -t -v
expect_eq "-t on the built-in config exits 0" "$RC" 0
for p in math echo sleep; do
  if grep -qF "plugin $p ($handlers/$p.so," "$T/builtin.out" "$T/builtin.err"; then
    pass "-t on the built-in config: plugin $p from $handlers"
  else
    fail "-t on the built-in config: plugin $p is not loaded from $handlers"
    show "$T/builtin.err"
  fi
done

# 3. The units.
units=$prefix/lib/systemd/system
need_file "$units/jrpcd.service" "the installed jrpcd.service"
need_file "$units/jrpcd.socket" "the installed jrpcd.socket"
expect_eq "jrpcd.service starts the prefix's jrpcd on the prefix's config" \
  "$(sed -n 's/^ExecStart=//p' "$units/jrpcd.service")" \
  "$prefix/bin/jrpcd -c $prefix/etc/jrpcd/jrpcd.conf"
need_file "$prefix/etc/jrpcd/jrpcd.conf" "the installed config"
# Every jrpcd binary or config path the units name, comments included.
others=$(grep -ohE '[^ ]*/(bin/jrpcd|etc/jrpcd/)[^ ]*' "$units/jrpcd.service" \
  "$units/jrpcd.socket" | grep -vF "$prefix/" || true)
expect_eq "the units name no jrpcd or config outside the prefix" "$others" ""

# 4. pkg-config, on the prefix's file alone.
pc() {
  PKG_CONFIG_PATH='' PKG_CONFIG_LIBDIR=$prefix/share/pkgconfig pkg-config "$@" jrpcd
}
expect_eq "pkg-config: plugindir is the prefix's" \
  "$(realpath -m "$(pc --variable=plugindir)")" "$handlers"
inc=$(pc --cflags-only-I)
inc=${inc%% *}
expect_eq "pkg-config: Cflags name the prefix's include folder" \
  "$(realpath -m "${inc#-I}")" "$prefix/include"
need_file "$prefix/include/jrpc/jrpc.h" "the installed jrpc.h"

# 5. Served from the prefix: a config that leaves plugin_dir to the default.
sock=$T/s.sock
printf '[listen local]\nunix = %s\n[plugin math]\npath = math.so\n' "$sock" >"$T/serve.conf"
start_daemon serve "$T/serve.conf" "$sock"
expect_call "served from the prefix" "$sock" "$ADD" "$THREE"
stop_daemon serve "$PID" "$sock"

# 6. Moved as a whole.
mv "$prefix" "$T/moved"
JRPCD=$T/moved/bin/jrpcd
run_jrpcd moved -T
expect_eq "-T after a move: the default plugin_dir follows" \
  "$(sed -nE 's/^plugin_dir = (.*[^ ]) *; default$/\1/p' "$T/moved.out")" \
  "$T/moved/lib/jrpcd/handlers"

finish
