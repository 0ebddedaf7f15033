#!/usr/bin/env bash
# discover.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# rpc.discover and jrpc_describe: the document is OpenRPC 1.2.6, valid
# against the meta-schema of that version (the @open-rpc/meta-schema npm
# package pinned at the last release whose newest version is 1.2.6, which
# requires a result of every method; installed into the test's folder;
# checked with Debian's python3-jsonschema), lists the methods the caller
# may call here (sorted; described ones as their modules described them,
# others as taking any params; not rpc.discover itself; a listener's
# `methods` and [access] narrowing it, rpc.stats only where stats is on),
# answers on a listener whose `methods` leave it out but not where
# `discover = no`; calls at the limits the sample plugins describe succeed;
# and each way a description can be wrong fails the plugin's load with the
# plugin and the method named.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"

# The OpenRPC meta-schema, and the JSON Schema meta-schema it refers to by
# URL (served from the package here: nothing is fetched but from npm).
readonly META_SCHEMA=@open-rpc/meta-schema@1.14.2
readonly JSON_META_SCHEMA=@json-schema-tools/meta-schema@1.8.0

# call_json SOCKET METHOD PARAMS -> the reply
call_json() {
  printf '{"jsonrpc":"2.0","method":"%s","params":%s,"id":1}\n' "$2" "$3" |
    timeout 10 socat -t 5 - "UNIX-CONNECT:$1"
}

# expect_in_reply NAME SOCKET METHOD PARAMS TEXT: the reply holds TEXT.
expect_in_reply() {
  local got
  got=$(call_json "$2" "$3" "$4") || true
  if [[ $got == *"$5"* ]]; then
    pass "$1"
  else
    fail "$1: $3 $4 -> ${got:0:300} (wanted $5)"
  fi
}

discover() { # SOCKET -> the result member of rpc.discover's reply
  printf '%s\n' '{"jsonrpc":"2.0","method":"rpc.discover","id":1}' |
    timeout 10 socat -t 5 - "UNIX-CONNECT:$1" |
    /usr/bin/python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("result")))'
}

# check NAME PYTHON-EXPRESSION: true of the document d (a dict).
check() {
  if /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$T/doc.json"; then
    pass "$1"
  else
    fail "$1: $2"
    show "$T/doc.json"
  fi
}

main() {
  need_file "$JRPCD" jrpcd
  need_file "$FX/fx_good.so" "the fx_good fixture"
  need_cmd socat
  [[ -x /usr/bin/python3 ]] || missing "/usr/bin/python3 is needed"
  /usr/bin/python3 -c 'import jsonschema' 2>/dev/null ||
    missing "python3-jsonschema is needed (scripts/deps.sh installs it)"
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    missing "npm and node are needed for the OpenRPC meta-schema (scripts/deps.sh)"
  fi
  setup_tmp
  cat >"$T/d.conf" <<CONF
$(conf_server)
[listen local]
unix = $T/d.sock
[listen sub]
unix = $T/sub.sock
methods = math.*
stats = off
[listen quiet]
unix = $T/quiet.sock
stats = off
[listen closed]
unix = $T/closed.sock
discover = no
$(conf_plugins math echo sleep)
max_ms = 150
$(conf_plugins kv)
[plugin good]
path = $FX/fx_good.so
[access]
sleep.work_ms = uid:4242
CONF
  start_daemon discover "$T/d.conf" "$T/d.sock"
  local pid=$PID
  discover "$T/d.sock" >"$T/doc.json"
  check "openrpc 1.2.6, info with jrpcd's title and version" \
    'd["openrpc"] == "1.2.6" and d["info"]["title"] == "jrpcd" and d["info"]["version"]'
  check "every method it may call, sorted, rpc.discover left out" \
    '[m["name"] for m in d["methods"]] == ["echo", "fx.ok", "kv.del", "kv.get", "kv.set", "kv.stats", "kv.unwatch", "kv.watch", "math.add", "math.divide", "math.multiply", "math.subtract", "rpc.stats", "sleep.ms"]'
  check "math.add as the math module described it" \
    '[m for m in d["methods"] if m["name"] == "math.add"][0]["params"][1] == {"name": "b", "required": True, "schema": {"type": "number"}}'
  check "fx.ok, undescribed: any params" \
    '[m for m in d["methods"] if m["name"] == "fx.ok"][0] == {"name": "fx.ok", "params": [], "result": {"name": "result", "schema": {}}, "x-jrpcd-params": "any"}'
  check "every method has a result (OpenRPC 1.2.6 requires it)" \
    'all("result" in m for m in d["methods"])'
  check "sleep.ms states the max_ms it enforces" \
    '[m for m in d["methods"] if m["name"] == "sleep.ms"][0]["params"][0]["schema"] == {"type": "integer", "minimum": 0, "maximum": 150}'
  # Calls at the limits the description states succeed, and one past them
  # is refused (so the description states the handler's own limits).
  local key
  key=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=[m for m in d["methods"] if m["name"] == "kv.set"][0]["params"][0]["schema"]; print("\u00e9" * s["maxLength"])' "$T/doc.json")
  expect_in_reply "kv.set at maxLength (256 two-byte characters)" "$T/d.sock" kv.set "[\"$key\",1]" '"result":{"created":true}'
  expect_in_reply "kv.set past maxLength" "$T/d.sock" kv.set "[\"${key}x\",1]" '"code":-32602'
  expect_in_reply "sleep.ms at its maximum" "$T/d.sock" sleep.ms '[150]' '"result":150'
  expect_in_reply "sleep.ms past its maximum" "$T/d.sock" sleep.ms '[151]' '"code":-32602'
  expect_in_reply "math.divide by the 0 its schema excludes" "$T/d.sock" math.divide '[1,0]' '"reason":"division by zero"'

  # The OpenRPC meta-schema, from npm (pinned), into this test's folder.
  npm_install "$META_SCHEMA" "$JSON_META_SCHEMA"
  local pkg
  for pkg in open-rpc json-schema-tools; do
    (cd "$T/npm" && node -e '
      const m = require(process.argv[1]);
      process.stdout.write(JSON.stringify(m.default || m));' "@$pkg/meta-schema") >"$T/$pkg.json"
  done
  cat >"$T/validate.py" <<'PY'
import json, sys
from jsonschema import Draft7Validator, RefResolver
schema = json.load(open(sys.argv[1]))
json_meta = json.load(open(sys.argv[2]))
doc = json.load(open(sys.argv[3]))
def offline(url):
    raise RuntimeError("not fetched: " + url)
# The 1.2.6 meta-schema embeds JSON Schema's, whose "properties" name a
# "$id": python3-jsonschema's search for a $ref among subschemas' ids
# trips on it (a dict, not an id). Without that search every $ref is
# looked up by URL in the store, which holds both schemas.
class Resolver(RefResolver):
    def _find_in_subschemas(self, url):
        try:
            return super()._find_in_subschemas(url)
        except TypeError:
            return None
store = {u: json_meta for u in ("https://meta.json-schema.tools",
                                "https://meta.json-schema.tools/")}
store[schema["$id"]] = schema
resolver = Resolver.from_schema(schema, store=store,
                                handlers={"http": offline, "https": offline})
errors = sorted(Draft7Validator(schema, resolver=resolver).iter_errors(doc),
                key=str)
for e in errors[:5]:
    print(list(e.path), e.message)
sys.exit(1 if errors else 0)
PY
  if /usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); d=json.load(open(sys.argv[2])); o=s.get("definitions", {}).get("openrpc") or s["properties"]["openrpc"]; sys.exit(0 if o["enum"][0] == d["openrpc"] else 1)' \
    "$T/open-rpc.json" "$T/doc.json"; then
    pass "the meta-schema is that of the version the document declares"
  else
    fail "$META_SCHEMA is not the meta-schema of the declared version"
  fi
  if /usr/bin/python3 "$T/validate.py" "$T/open-rpc.json" "$T/json-schema-tools.json" "$T/doc.json" >"$T/valid.out" 2>&1; then
    pass "the document is valid against the OpenRPC meta-schema"
  else
    fail "rpc.discover's document against the OpenRPC meta-schema:"
    show "$T/valid.out"
  fi
  # The validator can fail: the document with one member of a method taken
  # out (EDIT, Python on d) is refused, naming WANT.
  refused_by_schema() { # WHAT EDIT WANT
    /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2; json.dump(d, open(sys.argv[2], 'w'))" \
      "$T/doc.json" "$T/bad.json"
    if ! /usr/bin/python3 "$T/validate.py" "$T/open-rpc.json" "$T/json-schema-tools.json" "$T/bad.json" >"$T/bad.out" 2>&1 &&
      grep -q "$3" "$T/bad.out"; then
      pass "the meta-schema refuses $1"
    else
      fail "the meta-schema check accepts $1"
      show "$T/bad.out"
    fi
  }
  refused_by_schema "a method without params" 'del d["methods"][0]["params"]' methods
  refused_by_schema "a method without result" \
    'del [m for m in d["methods"] if m["name"] == "rpc.stats"][0]["result"]' rpc.stats

  # A listener's methods narrow it and leave rpc.discover callable; with
  # stats off there, rpc.stats is neither listed nor callable.
  discover "$T/sub.sock" >"$T/doc.json"
  check "on a listener serving math.* only, stats off: rpc.discover answers" \
    '[m["name"] for m in d["methods"]] == ["math.add", "math.divide", "math.multiply", "math.subtract"]'
  discover "$T/quiet.sock" >"$T/doc.json"
  check "stats off, every method served: rpc.stats not listed" \
    '"rpc.stats" not in [m["name"] for m in d["methods"]] and "math.add" in [m["name"] for m in d["methods"]]'
  expect_in_reply "rpc.stats where stats is off" "$T/quiet.sock" rpc.stats '[]' '"code":-32601'
  # discover = no: rpc.discover is not there, the rest is.
  expect_in_reply "rpc.discover where discover = no" "$T/closed.sock" rpc.discover '[]' '"code":-32601'
  expect_in_reply "math.add where discover = no" "$T/closed.sock" math.add '[1,2]' '"result":3'
  stop_daemon discover "$pid" "$T/d.sock"

  # Each refused description: the plugin does not load, and says why.
  local kind want
  for kind in json object name params method; do
    case $kind in
    json) want='description of "fx.described": not valid JSON' ;;
    object) want='description of "fx.described": not a JSON object' ;;
    name) want='description of "fx.described": has a "name"' ;;
    params) want='description of "fx.described": has no "params"' ;;
    method) want='description of "fx.other": not a method this module registered' ;;
    esac
    refused_conf "desc_$kind" "fx_desc_$kind.so: init failed: $want" \
      "$(printf '[listen x]\nunix = %s/x.sock\n[plugin p]\npath = %s/fx_desc_%s.so' "$T" "$FX" "$kind")"
  done
  finish
}

main
