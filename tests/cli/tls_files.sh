#!/usr/bin/env bash
# tls_files.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# jrpcd's config errors for the files it loads (issue 25 point 5), each
# named with the config file, the line of its key and the reason in plain
# words: a TLS key that is missing (the OS's errno text), that jrpcd's
# user may not read (Permission denied; as root, -t is run as nobody),
# that is not PEM ("not a PEM private key", a DER one too), that is not
# the key of the certificate, that is encrypted (refused without asking
# for a pass phrase), a certificate file that holds a key, a
# tls_client_ca file that holds a key or is not PEM; -t and a
# start both refuse. A key a plugin does not declare (jrpc_conf_keys)
# named with its own line in [plugin sleep], at -t and at start.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"

# tls_conf KEYFILE [CERTFILE]: a config with one TLS listener (for
# bad_config's stdin: not through a pipe, whose subshell would lose its
# failures).
tls_conf() {
  printf '[server]\nworkers = 1\n# the listener\n[listen t]\ntcp = 127.0.0.1:1\ntls_cert = %s\ntls_key = %s\n' \
    "${2:-$T/c.pem}" "$1"
}

test_key_files() {
  bad_config key_missing "tls_key = $T/none.pem" '[listen t] tls_key' \
    "$T/none.pem: No such file or directory" \
    < <(tls_conf "$T/none.pem")
  echo "not a key" >"$T/garbage.pem"
  bad_config key_garbage "tls_key = $T/garbage.pem" '[listen t] tls_key' \
    "$T/garbage.pem: not a PEM private key (no \"-----BEGIN\" line; a DER file converts with openssl pkey -inform DER)" \
    < <(tls_conf "$T/garbage.pem")
  openssl pkey -in "$T/k.pem" -outform DER -out "$T/der.key" 2>/dev/null
  bad_config key_der "tls_key = $T/der.key" '[listen t] tls_key' \
    "$T/der.key: not a PEM private key" \
    < <(tls_conf "$T/der.key")
  bad_config key_other "tls_key = $T/k2.pem" '[listen t] tls_key' \
    "$T/k2.pem is not the key of tls_cert $T/c.pem" \
    < <(tls_conf "$T/k2.pem")
  openssl pkey -in "$T/k.pem" -aes256 -passout pass:secret -out "$T/enc.pem" 2>/dev/null
  # stdin a pipe that stays open: a prompt for the pass phrase would wait.
  tls_conf "$T/enc.pem" >"$T/key_enc.conf"
  local quiet
  exec {quiet}< <(exec sleep 60 2>/dev/null)
  RC=0
  timeout -k 5 "$START_LIMIT_S" "$JRPCD" -t -c "$T/key_enc.conf" <&"$quiet" \
    >"$T/key_enc.out" 2>"$T/key_enc.err" || RC=$?
  kill "$!" 2>/dev/null || true
  exec {quiet}<&-
  if expect_rc key_enc 1 &&
    expect_in key_enc err "$T/key_enc.conf:7: [listen t] tls_key: $T/enc.pem: an encrypted private key: jrpcd asks for no pass phrase" &&
    expect_not_in key_enc err "pass phrase:"; then
    pass "-t key_enc: $(head -n1 "$T/key_enc.err")"
  fi
  bad_config cert_is_key "tls_cert = $T/k.pem" '[listen t] tls_cert' \
    "$T/k.pem: a private key, not a certificate (tls_cert and tls_key swapped?)" \
    < <(tls_conf "$T/k.pem" "$T/k.pem")
  bad_config ca_is_key "tls_client_ca = $T/k.pem" '[listen t] tls_client_ca' \
    "$T/k.pem: a private key, not a certificate" \
    < <(tls_conf "$T/k.pem" && echo "tls_client_ca = $T/k.pem")
  bad_config ca_garbage "tls_client_ca = $T/garbage.pem" '[listen t] tls_client_ca' \
    "$T/garbage.pem: not a PEM certificate" \
    < <(tls_conf "$T/k.pem" && echo "tls_client_ca = $T/garbage.pem")
  tls_conf "$T/garbage.pem" >"$T/start.conf"
  run_jrpcd start -c "$T/start.conf"
  if expect_rc start 1 &&
    expect_in start err "$T/start.conf:7: [listen t] tls_key: $T/garbage.pem: not a PEM private key"; then
    pass "a start refuses the garbage key the same way"
  fi
}

# A key jrpcd's user may not read. As root (who reads anything) -t runs
# as nobody, with the config and certificate readable by all.
test_key_denied() {
  local dir=$T/pub
  mkdir "$dir"
  cp "$T/c.pem" "$T/k.pem" "$dir/"
  chmod 000 "$dir/k.pem"
  tls_conf "$dir/k.pem" "$dir/c.pem" >"$dir/denied.conf"
  RC=0
  if (($(id -u) == 0)); then
    command -v setpriv >/dev/null || missing "setpriv (util-linux) to run jrpcd -t as nobody"
    chmod 711 "$T"
    chmod 755 "$dir"
    chmod 644 "$dir/c.pem" "$dir/denied.conf"
    timeout -k 5 "$START_LIMIT_S" setpriv --reuid=65534 --regid=65534 --clear-groups \
      "$JRPCD" -t -c "$dir/denied.conf" >"$T/key_denied.out" 2>"$T/key_denied.err" || RC=$?
  else
    timeout -k 5 "$START_LIMIT_S" "$JRPCD" -t -c "$dir/denied.conf" \
      >"$T/key_denied.out" 2>"$T/key_denied.err" || RC=$?
  fi
  if expect_rc key_denied 1 &&
    expect_in key_denied err "$dir/denied.conf:7: [listen t] tls_key: $dir/k.pem: Permission denied"; then
    pass "-t key_denied: $(head -n1 "$T/key_denied.err")"
  fi
}

# A typo in a plugin's own section: the line of that key, not the
# section's.
test_plugin_key_line() {
  printf '[server]\nworkers = 1\nplugin_dir = %s\n[listen a]\nunix = %s/pk.sock\n[plugin sleep]\npath = sleep.so\n# short sleeps only\nmax_ms = 10\n\nmax_mss = 100\n' \
    "$HANDLERS" "$T" >"$T/pk.conf"
  run_jrpcd pk -t -c "$T/pk.conf"
  if expect_rc pk 1 &&
    expect_in pk err "$T/pk.conf:11: [plugin sleep] $HANDLERS/sleep.so: init failed: max_mss: unknown key; did you mean max_ms?"; then
    pass "-t: $(grep -m1 max_mss "$T/pk.err")"
  fi
  printf 'strict_plugins = yes\n' | sed -i '2r /dev/stdin' "$T/pk.conf"
  run_jrpcd pk_start -c "$T/pk.conf"
  if expect_rc pk_start 1 &&
    expect_in pk_start err "$T/pk.conf:12: [plugin sleep] $HANDLERS/sleep.so: init failed: max_mss: unknown key"; then
    pass "a start (strict_plugins) names the line too"
  fi
}

main() {
  need_file "$JRPCD" jrpcd
  need_file "$HANDLERS/sleep.so" "the sleep plugin"
  if ! "$JRPCD" -V | grep -q '^TLS: OpenSSL'; then
    echo "SKIP: a build without TLS"
    exit 77
  fi
  need_cmd openssl
  setup_tmp
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$T/k.pem" -out "$T/c.pem" -days 2 -subj /CN=localhost 2>/dev/null
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$T/k2.pem" -out "$T/c2.pem" -days 2 -subj /CN=other 2>/dev/null
  test_key_files
  test_key_denied
  test_plugin_key_line
  finish
}

main "$@"
