#!/usr/bin/env bash
# deb.sh - the Debian package of jrpcd, from source to purge:
#
#  1. configures a build tree of its own for /usr (RelWithDebInfo, no
#     sanitizer, no fuzzing, no tests or bench), builds it and runs
#     cpack -G DEB;
#  2. checks the package: control fields (Depends names libuv1, libinih1
#     and libsimdjson* exactly when built with simdjson), conffiles, the
#     maintainer scripts (valid sh, never enabling or starting anything),
#     the file list, ownership, and that no file names the build tree;
#  3. installs it into a staging root: as root with dpkg --root on an empty
#     dpkg database of its own (the system's is never touched; maintainer
#     scripts run chrootless and see DPKG_ROOT), else with dpkg-deb -x;
#  4. runs the staged jrpcd: -V, -t on the packaged config (its plugin_dir
#     pointed into the staging root in a copy), then serves the packaged
#     handlers on a Unix socket of its own and answers math.add and echo;
#  5. builds examples/out-of-tree-handler (copied out of the source tree)
#     against the staged install only: with its Makefile and pkg-config
#     (PKG_CONFIG_PATH and PKG_CONFIG_LIBDIR inside the staging root; the
#     jrpc.h compiled, from gcc -MMD, must be the staged one), then
#     with its CMakeLists.txt and find_package(jrpcd) (CMAKE_PREFIX_PATH
#     at the staging root, package registries off; jrpcd_DIR and the
#     compile command must name the staging root); each hello.so is
#     installed into the staged plugin dir, loaded by the staged daemon and
#     called; every daemon stops on SIGTERM with status 0 and removes its
#     socket;
#  6. removes the package (only the conffile stays), purges it (nothing
#     stays), and deletes the staging root.
#
#   deb.sh SOURCE_DIR PKG_BUILD_DIR SIMDJSON(ON|OFF) WERROR(ON|OFF)
#
# Exits 77 (skipped) where dpkg-deb is missing.
set -euo pipefail
src=$1
pb=$2
simdjson=$3
werror=$4
# shellcheck source=tests/cli/lib.sh
source "$src/tests/cli/lib.sh"

if ! command -v dpkg-deb >/dev/null 2>&1; then
  echo "SKIP: dpkg-deb not found (the package test needs Debian's dpkg)"
  exit 77
fi
for c in cmake cpack dpkg dpkg-query socat pkg-config make cc timeout; do
  need_cmd "$c"
done
setup_tmp

t0=$SECONDS
phase() { # phase NAME: a progress line with the seconds spent so far
  printf -- '-- %s (%ds so far)\n' "$1" $((SECONDS - t0))
}

# What the package must say, from the sources themselves.
version=$(sed -nE 's/^project\(jrpcd VERSION ([0-9.]+).*/\1/p' "$src/CMakeLists.txt")
abi_major=$(sed -nE 's/^#define JRPC_ABI_MAJOR ([0-9]+).*/\1/p' "$src/lib/include/jrpc/jrpc.h")
abi_minor=$(sed -nE 's/^#define JRPC_ABI_MINOR ([0-9]+).*/\1/p' "$src/lib/include/jrpc/jrpc.h")
[[ -n "$version" && -n "$abi_major" && -n "$abi_minor" ]] ||
  die "cannot read the version or the ABI from the sources"
abi=$abi_major.$abi_minor

# ---- 1. build the package -------------------------------------------------
phase "configuring and building $pb"
# A clean environment: nothing of the calling build (sanitizer flags,
# compilers, make's jobserver) reaches the package build.
clean_env=(env -u CFLAGS -u CXXFLAGS -u CPPFLAGS -u LDFLAGS -u CC -u CXX
  -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u DESTDIR -u ASAN_OPTIONS
  -u UBSAN_OPTIONS -u LSAN_OPTIONS -u PKG_CONFIG_PATH -u PKG_CONFIG_LIBDIR
  -u CMAKE_PREFIX_PATH)
jobs=$(nproc)
log=$T/build.log
if ! "${clean_env[@]}" nice -n 10 cmake -S "$src" -B "$pb" \
  -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DJRPC_SANITIZE=OFF -DJRPC_FUZZ=OFF -DJRPC_TESTS=OFF -DJRPC_BENCH=OFF \
  -DJRPC_SIMDJSON="$simdjson" -DJRPC_WERROR="$werror" >"$log" 2>&1; then
  show "$log"
  die "configuring the package build tree failed"
fi
if ! "${clean_env[@]}" nice -n 10 cmake --build "$pb" -j"$jobs" >>"$log" 2>&1; then
  show "$log"
  die "building the package tree failed"
fi
if grep -q 'warning:' "$log"; then
  grep 'warning:' "$log" >&2
  fail "the package build has compiler warnings"
fi
phase "cpack -G DEB"
rm -f "$pb"/deb/*.deb
if ! (cd "$pb" && "${clean_env[@]}" cpack -G DEB -B "$pb/deb") >"$T/cpack.log" 2>&1; then
  show "$T/cpack.log"
  die "cpack -G DEB failed"
fi
debs=("$pb"/deb/jrpcd_*.deb)
[[ ${#debs[@]} -eq 1 && -f "${debs[0]}" ]] || die "cpack made no single jrpcd_*.deb in $pb/deb"
deb=${debs[0]}
arch=$(dpkg --print-architecture)
[[ "${deb##*/}" == "jrpcd_${version}_${arch}.deb" ]] ||
  fail "package file name ${deb##*/}, expected jrpcd_${version}_${arch}.deb"
pass "built ${deb##*/} ($(stat -c %s "$deb") bytes)"

# ---- 2. the package's control data and files ------------------------------
phase "checking the package"
dpkg-deb --info "$deb" >"$T/info" 2>&1 || { show "$T/info"; die "dpkg-deb --info failed"; }
sed 's/^/  | /' "$T/info"
field() { dpkg-deb --field "$deb" "$1"; }
expect_field() {
  local got
  got=$(field "$1")
  if [[ "$got" == "$2" ]]; then pass "$1: $got"; else fail "$1: '$got', expected '$2'"; fi
}
expect_field Package jrpcd
expect_field Version "$version"
expect_field Section net
expect_field Architecture "$arch"
[[ -n "$(field Maintainer)" ]] || fail "no Maintainer field"
[[ -n "$(field Description)" ]] || fail "no Description field"

depends=$(field Depends)
# The package names, versions stripped: "libc6 (>= 2.34), libuv1" -> lines.
dep_names=$(printf '%s\n' "$depends" | tr ',' '\n' | sed -E 's/\(.*\)//; s/\|.*//; s/^ +//; s/ +$//' | sed '/^$/d')
has_dep() { grep -qxE "$1" <<<"$dep_names"; }
for d in libuv1 libinih1 libhttp-parser2.9 libjansson4 libedit2; do # the last two: jrpc
  has_dep "$d" || fail "Depends lacks $d: $depends"
done
if [[ "$simdjson" == ON ]]; then
  has_dep 'libsimdjson[0-9]+' || fail "Depends lacks libsimdjson*: $depends"
else
  ! has_dep 'libsimdjson.*' || fail "Depends names simdjson in a build without it: $depends"
fi
pass "Depends: $depends"
# [cluster]'s NATS client is loaded at run time, not linked: recommended,
# when the build has it, never a dependency.
recommends=$(field Recommends 2>/dev/null || true)
if grep -q '^JRPCD_NATS_SONAME:INTERNAL=' "$pb/CMakeCache.txt"; then
  grep -qE '(^|, )libnats[0-9.]+' <<<"$recommends" ||
    fail "Recommends lacks libnats*: '$recommends'"
  ! has_dep 'libnats.*' || fail "Depends names libnats, which is loaded only for [cluster]: $depends"
  pass "Recommends: $recommends"
fi

mkdir "$T/control"
dpkg-deb --control "$deb" "$T/control"
conffiles=$(cat "$T/control/conffiles" 2>/dev/null || true)
if [[ "$conffiles" == "/etc/jrpcd/jrpcd.conf" ]]; then
  pass "conffiles: $conffiles"
else
  fail "conffiles: '$conffiles', expected /etc/jrpcd/jrpcd.conf"
fi
for s in preinst postinst prerm postrm; do
  [[ -e "$T/control/$s" ]] || continue
  [[ -x "$T/control/$s" ]] || fail "maintainer script $s is not executable"
  sh -n "$T/control/$s" || fail "maintainer script $s is not valid sh"
  # Installing must not start a daemon that listens on TCP 7400.
  if grep -v '^[[:space:]]*#' "$T/control/$s" |
    grep -E 'systemctl +(--[a-z-]+ +)*(start|enable|restart|try-restart|reload-or-restart)|deb-systemd-invoke +(start|restart|try-restart)|deb-systemd-helper +enable|service +jrpcd +start' >&2; then
    fail "maintainer script $s starts or enables the service"
  fi
  if grep -qE "systemctl|deb-systemd" "$T/control/$s" && ! grep -q 'DPKG_ROOT' "$T/control/$s"; then
    fail "maintainer script $s calls systemctl without checking DPKG_ROOT (it would act on the host during dpkg --root)"
  fi
done

dpkg-deb --contents "$deb" >"$T/contents"
# "./usr/bin/jrpcd" -> "/usr/bin/jrpcd"; directories end in /.
awk '{ print $6 }' "$T/contents" | sed 's#^\.##' >"$T/files"
want=(/usr/bin/jrpcd /usr/bin/jrpc /usr/share/bash-completion/completions/jrpc
  /usr/lib/jrpcd/handlers/math.so /usr/lib/jrpcd/handlers/echo.so /usr/lib/jrpcd/handlers/sleep.so
  /usr/lib/jrpcd/handlers/kv.so
  /usr/include/jrpc/jrpc.h
  /usr/share/pkgconfig/jrpcd.pc
  /usr/share/cmake/jrpcd/jrpcdConfig.cmake /usr/share/cmake/jrpcd/jrpcdConfigVersion.cmake
  /etc/jrpcd/jrpcd.conf
  /usr/lib/systemd/system/jrpcd.service /usr/lib/systemd/system/jrpcd.socket)
for f in "${want[@]}"; do
  grep -qxF "$f" "$T/files" || fail "the package lacks $f"
done
# Manual pages gzip -9n'd (packaging/deb/compress-man.cmake).
for m in man8/jrpcd.8 man5/jrpcd.conf.5 man1/jrpc.1; do
  grep -qxF "/usr/share/man/$m.gz" "$T/files" || fail "the package lacks /usr/share/man/$m.gz"
  want+=("/usr/share/man/$m.gz")
done
# Only root-owned files, none writable by group or others; the binary
# runs, the handlers and data do not need to.
awk '$2 != "root/root" { print "  " $0 }' "$T/contents" >"$T/owners"
[[ ! -s "$T/owners" ]] || { cat "$T/owners" >&2; fail "files not owned by root/root"; }
awk 'substr($1, 6, 1) == "w" || substr($1, 9, 1) == "w" { print "  " $0 }' "$T/contents" >"$T/writable"
[[ ! -s "$T/writable" ]] || { cat "$T/writable" >&2; fail "group- or world-writable files"; }
grep -qE '^-rwxr-xr-x .* \./usr/bin/jrpcd$' "$T/contents" || fail "/usr/bin/jrpcd is not mode 0755"
pass "file list: ${#want[@]} required files present"

# ---- 3. install into a staging root ---------------------------------------
R=$T/root
mkdir "$R"
via_dpkg=0
if [[ $(id -u) -eq 0 ]]; then
  via_dpkg=1
  phase "dpkg --root=$R -i"
  mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers"
  : >"$R/var/lib/dpkg/status"
  # The staging database has no libc6 or libuv1: ignore exactly our
  # dependencies. --log keeps the system's dpkg.log out of it.
  ignore=$(paste -sd, <<<"$dep_names")
  dpkg_root() {
    dpkg --root="$R" --log="$T/dpkg.log" --force-script-chrootless \
      --force-not-root "$@"
  }
  if ! dpkg_root --ignore-depends="$ignore" --install "$deb" >"$T/dpkg.out" 2>&1; then
    show "$T/dpkg.out"
    die "dpkg --root --install failed"
  fi
  st=$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Status} ${Version}' jrpcd)
  [[ "$st" == "install ok installed $version" ]] || fail "staged package status: $st"
  dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Conffiles}\n' jrpcd |
    grep -q '^ /etc/jrpcd/jrpcd.conf [0-9a-f]\{32\}' ||
    fail "dpkg did not record /etc/jrpcd/jrpcd.conf as a conffile"
  pass "installed into the staging root with dpkg --root: $st"
else
  phase "dpkg-deb -x (not root: no dpkg --root)"
  dpkg-deb -x "$deb" "$R"
  pass "extracted into the staging root"
fi
for f in "${want[@]}"; do
  [[ -e "$R$f" ]] || fail "not in the staging root: $f"
done

# No installed file may name the source or build tree.
if grep -rlF -e "$src" -e "$pb" "$R/usr" "$R/etc" >"$T/leaks" 2>/dev/null; then
  cat "$T/leaks" >&2
  fail "installed files name the source or build tree"
fi
# The units start the packaged binary with the packaged config.
for u in jrpcd.service jrpcd.socket; do
  while read -r exe; do
    [[ -x "$R$exe" ]] || fail "$u runs $exe, which the package does not install"
  done < <(sed -nE 's/^Exec[A-Za-z]*=[-@:+!]*([^ ]+).*/\1/p' "$R/usr/lib/systemd/system/$u" | grep '^/usr/' || true)
  while read -r conf; do
    [[ -f "$R$conf" ]] || fail "$u names $conf, which the package does not install"
  done < <(grep -v '^#' "$R/usr/lib/systemd/system/$u" | grep -oE '/etc/jrpcd/[A-Za-z0-9_.-]*[A-Za-z0-9_-]' || true)
done

# ---- 4. the staged daemon --------------------------------------------------
phase "running the staged jrpcd"
# shellcheck disable=SC2034 # lib.sh's run_jrpcd and start_daemon run it
JRPCD=$R/usr/bin/jrpcd
run_jrpcd version -V
expect_rc version 0 && expect_in version out "jrpcd $version" &&
  expect_in version out "ABI $abi" && pass "jrpcd -V: $(cat "$T/version.out")"

# The packaged config as is names the packaged plugin folder (the daemon's
# built-in default) and the socket folder systemd makes (/run/jrpcd): it
# passes where jrpcd is installed and running for real, and otherwise fails
# naming /usr/lib/jrpcd/handlers or /run/jrpcd.
run_jrpcd conf_as_is -t -c "$R/etc/jrpcd/jrpcd.conf"
if [[ "$RC" != 0 ]]; then
  if grep -qF "its directory /run/jrpcd: " "$T/conf_as_is.err"; then
    pass "the packaged config's socket is in /run/jrpcd, which systemd makes"
  else
    expect_in conf_as_is err "/usr/lib/jrpcd/handlers/math.so" &&
      pass "the packaged config looks for its handlers in /usr/lib/jrpcd/handlers"
  fi
fi
# A copy with plugin_dir pointed into the staging root (and the socket
# into the test's folder) must pass -t.
handlers=$R/usr/lib/jrpcd/handlers
sed -E -e "s#^;[ ]*plugin_dir = /usr/lib/jrpcd/handlers\$#plugin_dir = $handlers#" \
  -e "s#^unix = /run/jrpcd/#unix = $T/#" \
  "$R/etc/jrpcd/jrpcd.conf" >"$T/staged.conf"
grep -qxF "plugin_dir = $handlers" "$T/staged.conf" ||
  fail "the packaged config has no ';plugin_dir = /usr/lib/jrpcd/handlers' line to point elsewhere"
run_jrpcd conf_staged -t -c "$T/staged.conf"
expect_rc conf_staged 0 &&
  expect_in conf_staged out "plugin math ($handlers/math.so" &&
  pass "jrpcd -t accepts the packaged config (plugin_dir in the staging root)"

sock=$T/j.sock
# serve NAME EXTRA_CONF: the staged daemon on $sock with the packaged
# handlers math and echo plus EXTRA_CONF.
serve() {
  cat >"$T/$1.conf" <<EOF
[server]
workers = 2
plugin_dir = $handlers

[listen local]
unix = $sock
mode = 0600

[plugin math]
path = math.so

[plugin echo]
path = echo.so
$2
EOF
  start_daemon "$1" "$T/$1.conf" "$sock"
}
serve packaged ""
expect_call packaged "$sock" '{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}' \
  '{"jsonrpc":"2.0","result":3,"id":1}'
expect_call packaged "$sock" '{"jsonrpc":"2.0","method":"echo","params":["x",{"y":[1]}],"id":"e"}' \
  '{"jsonrpc":"2.0","result":["x",{"y":[1]}],"id":"e"}'
stop_daemon packaged "$PID" "$sock"

# ---- 5. the out-of-tree handler example, against the staged install -------
phase "out-of-tree handler: Makefile + pkg-config"
ex=$T/example
cp -r "$src/examples/out-of-tree-handler" "$ex"
rm -rf "$ex/build" "$ex"/*.so
# Only the staging root's .pc files: PKG_CONFIG_LIBDIR replaces the system
# search path, PKG_CONFIG_PATH names the same folder.
pc_env=(env -u PKG_CONFIG_SYSROOT_DIR -u CFLAGS -u CPPFLAGS -u LDFLAGS -u MAKEFLAGS -u MFLAGS
  -u MAKELEVEL PKG_CONFIG_PATH="$R/usr/share/pkgconfig" PKG_CONFIG_LIBDIR="$R/usr/share/pkgconfig")
pcv() { "${pc_env[@]}" pkg-config "$@"; }
pcv --exists jrpcd || fail "pkg-config does not find jrpcd.pc in the staging root"
[[ "$(pcv --modversion jrpcd)" == "$version" ]] || fail "jrpcd.pc version $(pcv --modversion jrpcd), expected $version"
[[ "$(pcv --variable=abi jrpcd)" == "$abi" ]] || fail "jrpcd.pc abi $(pcv --variable=abi jrpcd), expected $abi"
[[ "$(pcv --variable=abi_major jrpcd).$(pcv --variable=abi_minor jrpcd)" == "$abi" ]] ||
  fail "jrpcd.pc abi_major/abi_minor disagree with jrpc.h ($abi)"
cflags=$(pcv --cflags jrpcd | sed 's/ *$//')
[[ "$cflags" == -I* && "$(realpath -m "${cflags#-I}")" == "$R/usr/include" ]] ||
  fail "pkg-config --cflags jrpcd: '$cflags', expected -I of $R/usr/include"
[[ -z "$(pcv --libs jrpcd)" ]] || fail "jrpcd.pc has libs: $(pcv --libs jrpcd) (handlers link nothing)"
plugindir=$(pcv --variable=plugindir jrpcd)
[[ "$(realpath -m "$plugindir")" == "$handlers" ]] ||
  fail "pkg-config plugindir: '$plugindir', expected $handlers"
pass "jrpcd.pc from the staging root: $cflags, plugindir $plugindir, abi $abi"

# -MMD writes hello.d: the jrpc.h that was compiled must be the staged one.
if ! "${pc_env[@]}" make -C "$ex" CFLAGS="-O2 -Wall -Wextra -Werror" CPPFLAGS=-MMD \
  >"$T/make.log" 2>&1; then
  show "$T/make.log"
  die "the example's Makefile failed against the staged install"
fi
used=$(sed 's/\\$//' "$ex/hello.d" | tr ' ' '\n' | grep 'jrpc\.h$' || true)
[[ -n "$used" && "$(realpath "$used")" == "$R/usr/include/jrpc/jrpc.h" ]] ||
  fail "hello.so was compiled with ${used:-no} jrpc.h, not the staged one"
"${pc_env[@]}" make -C "$ex" install >>"$T/make.log" 2>&1 || { show "$T/make.log"; die "make install failed"; }
[[ -f "$handlers/hello.so" ]] || fail "make install put no hello.so into $handlers"
pass "built with make against the staged jrpcd.pc and installed into plugindir"

serve hello_make $'\n[plugin hello]\npath = hello.so'
expect_call hello_make "$sock" '{"jsonrpc":"2.0","method":"hello.greet","params":{"name":"bob"},"id":1}' \
  '{"jsonrpc":"2.0","result":"hello, bob","id":1}'
expect_call hello_make "$sock" '{"jsonrpc":"2.0","method":"math.add","params":[40,2],"id":2}' \
  '{"jsonrpc":"2.0","result":42,"id":2}'
stop_daemon hello_make "$PID" "$sock"

phase "out-of-tree handler: CMake + find_package(jrpcd)"
rm -f "$handlers/hello.so" "$ex/hello.so" "$ex/hello.d"
# CMAKE_PREFIX_PATH is searched before the system prefixes, and package
# registries are off; jrpcd_DIR and the compile command must then name the
# staging root.
if ! "${clean_env[@]}" cmake -S "$ex" -B "$ex/build" -DCMAKE_PREFIX_PATH="$R/usr" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" \
  >"$T/cmake-example.log" 2>&1 ||
  ! "${clean_env[@]}" cmake --build "$ex/build" >>"$T/cmake-example.log" 2>&1; then
  show "$T/cmake-example.log"
  die "the example's CMakeLists.txt failed against the staged install"
fi
jdir=$(sed -n 's/^jrpcd_DIR:PATH=//p' "$ex/build/CMakeCache.txt")
[[ "$(realpath -m "$jdir")" == "$R/usr/share/cmake/jrpcd" ]] ||
  fail "find_package(jrpcd) used $jdir, not the staging root's"
grep -qF -- "$R/usr/include" "$ex/build/compile_commands.json" ||
  fail "hello.c was not compiled with the staged include folder"
if ! "${clean_env[@]}" cmake --install "$ex/build" >>"$T/cmake-example.log" 2>&1; then
  show "$T/cmake-example.log"
  die "cmake --install of the example failed"
fi
[[ -f "$handlers/hello.so" ]] || fail "cmake --install put no hello.so into $handlers"
pass "built with find_package(jrpcd) from the staging root and installed into JRPCD_PLUGIN_DIR"

# Its config keys reach init: greeting = hi.
serve hello_cmake $'\n[plugin hello]\npath = hello.so\ngreeting = hi'
expect_call hello_cmake "$sock" '{"jsonrpc":"2.0","method":"hello.greet","params":["ann"],"id":3}' \
  '{"jsonrpc":"2.0","result":"hi, ann","id":3}'
stop_daemon hello_cmake "$PID" "$sock"
rm -f "$handlers/hello.so" # ours, not the package's: gone before removal

# ---- 6. remove, purge, clean up ---------------------------------------------
if ((via_dpkg)); then
  phase "dpkg --remove, --purge"
  # What is left outside dpkg's own database.
  leftovers() { find "$R" -mindepth 1 -not -path "$R/var" -not -path "$R/var/lib" -not -path "$R/var/lib/dpkg" -not -path "$R/var/lib/dpkg/*" | sort; }
  dpkg_root --remove jrpcd >"$T/dpkg.out" 2>&1 || { show "$T/dpkg.out"; die "dpkg --root --remove failed"; }
  left=$(leftovers)
  [[ "$left" == "$(printf '%s\n' "$R/etc" "$R/etc/jrpcd" "$R/etc/jrpcd/jrpcd.conf")" ]] ||
    fail "after --remove, expected only the conffile left, found:"$'\n'"$left"
  st=$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Status}' jrpcd)
  [[ "$st" == "deinstall ok config-files" ]] || fail "status after --remove: $st"
  dpkg_root --purge jrpcd >"$T/dpkg.out" 2>&1 || { show "$T/dpkg.out"; die "dpkg --root --purge failed"; }
  left=$(leftovers)
  [[ -z "$left" ]] || fail "after --purge, left behind:"$'\n'"$left"
  if dpkg-query --admindir="$R/var/lib/dpkg" -W jrpcd >/dev/null 2>&1; then
    fail "dpkg still knows jrpcd after --purge"
  fi
  pass "removed (conffile kept), then purged: nothing left"
fi
rm -rf "$R"
[[ ! -e "$R" ]] || fail "the staging root $R is still there"
phase "done"
finish
