#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/corpus/ (hand-written seeds).

    python3 tests/fuzz/make_seeds.py     # from anywhere; rewrites the seeds

Only for regenerating them: the seeds are committed, the build and CI never
run this. Each file is named by what it holds. Inputs the fuzzer found
worth keeping go to tests/fuzz/regression/<target>/, never here.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def req(method, params=None, id_=None, notify=False):
    s = '{"jsonrpc":"2.0","method":"%s"' % method
    if params is not None:
        s += ',"params":' + params
    if not notify:
        s += ',"id":' + (id_ if id_ is not None else "1")
    return s + "}"


def vm(*ops):
    return req("vm", "[" + ",".join(str(o) for o in ops) + "]")


# Request payloads: valid calls, notifications, batches, bad JSON, edges.
PAYLOADS = {
    "add": req("math.add", "[1,2]"),
    "divide_named": req("math.divide", '{"a":1,"b":4}', '"q"'),
    "divide_zero": req("math.divide", "[1,0]", "8"),
    "multiply_big": req("math.multiply", "[1e300,1e300]", "2"),
    "subtract_i64": req("math.subtract",
                        "[-9223372036854775808,9223372036854775807]", "3"),
    "echo": req("echo", '[1,"two",{"three":3}]', "7"),
    "echo_absent": req("echo"),
    "notify": req("echo", "[1]", notify=True),
    "notify_unknown": req("nope", notify=True),
    "unknown": req("nope", "[]", '"x"'),
    "rpc_reserved": req("rpc.discover"),
    "walk": req("walk", '{"k\\u0000ey":"\\ud83d\\ude00\\n\\u00e9","n":[-0,1.5e300,'
                '12345678901234567890,-9223372036854775808,1e-400,0.1,1E+2],'
                '"b":[true,false,null,[],{}]}', "1.50"),
    "walk_dup": req("walk", '{"a":1,"b":2,"a":3,"\\u0061":4}', '"\\u0041"'),
    "walk_deep": req("walk", "[" * 120 + "]" * 120),
    "vm_object": vm(0, 4, 7, 1),
    "vm_misuse": vm(2, 2, 3, 4, 1),
    "vm_error": vm(2, 13, 11),
    "vm_error_data": vm(14, 0, 4, 11 + 24, 1),
    "vm_error_data_none": vm(14 + 24 * 9),
    "vm_alloc_defer": vm(15 + 24 * 5, 15 + 24 * 6, 16, 11),
    "vm_return": vm(11, 17 + 24 * 2),
    "vm_async": vm(17 + 24 * 3),
    "vm_raw_crlf": vm(18, 12),
    "vm_weird": vm(2, 5, 6, 6 + 24 * 3, 22, 3),
    "vm_numbers": vm(2, 8, 9, 9 + 24 * 12, 9 + 24 * 13, 9 + 24 * 4, 23, 3),
    "vm_big_string": vm(21 + 24 * 1999),
    "vm_values": req("vm", '["str\\u00e9",{"x":[1]},true,null,1.5]'),
    "vm_log_peer": vm(19, 19 + 24, 20, 10),
    "fail": req("fail", '["m\\u0000sg \\"x\\"",0]', "null"),
    "fail_code": req("fail", '["bad",-32700]', "-0"),
    "fail_data": req("fail_data", '{"why":[1,2,null]}', "5"),
    "huge": req("huge", "[100]"),
    "huge_numbers": req("huge", "[1000,1]"),
    "defer": req("defer", "[]", '"d"'),
    "batch": "[" + ",".join([
        req("math.add", "[1,2]"),
        req("walk", '{"a":[true,false,null],"a":"dup"}', notify=True),
        '{"foo":"boo"}',
        req("nope", None, '"x"'),
        "1",
    ]) + "]",
    "batch_empty": "[]",
    "batch_numbers": "[1,2,3]",
    "batch_notifications": "[" + req("echo", "[1]", notify=True) + "," +
                           req("math.add", "[1,2]", notify=True) + "]",
    "batch_mixed_huge": "[" + req("huge", "[300]") + "," +
                        req("vm", "[21,47]", "2") + "]",
    "dup_id": '{"jsonrpc":"2.0","method":"echo","id":1,"id":2}',
    "escaped_envelope": '{"jsonrpc":"2\\u002e0","method":"e\\u0063ho",'
                        '"params":[],"id":1e3}',
    "bad_version": '{"jsonrpc":"1.0","method":"echo","id":1}',
    "bad_params": '{"jsonrpc":"2.0","method":"echo","params":1,"id":{}}',
    "not_request": "{}",
    "scalar": '"x"',
    "bad_json_bracket": '{"jsonrpc":"2.0","method":"echo","params":[1,2,"id":1}',
    "bad_json_comma": '{"jsonrpc":"2.0",,"method":"echo"}',
    "bad_json_literal": '[tru,nul]',
    "bad_json_number": '[01,1.,-,.5,1e]',
    "bad_utf8": '["\xff\xc0\xaf"]',
    "lone_surrogate": '["\\ud800"]',
    "control_char": '["a\x01b"]',
    "nested_128": "[" * 128 + "]" * 128,
    "nested_129": "[" * 129 + "]" * 129,
    "trailing_garbage": "{} x",
    "nul_inside": '{"jsonrpc":"2.0"}\x00{',
    "bom": "\xef\xbb\xbf{}",
    "whitespace": ' \t{ "jsonrpc" : "2.0" , "method" : "echo" , "id" : 1 } ',
}


def b(s):
    return s.encode("latin-1") if isinstance(s, str) else s


def newline(*payloads):
    return b"".join(b(p) + b"\n" for p in payloads)


def length(*payloads):
    return b"".join(struct.pack(">I", len(b(p))) + b(p) for p in payloads)


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(b(data))


def clear(target):
    d = os.path.join(CORPUS, target)
    if os.path.isdir(d):
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))


def request_seeds():
    # fuzz_request: flags byte (bit 0 length framing, bits 1-2 reads,
    # bits 3-4 limits), then the stream.
    t = "fuzz_request"
    clear(t)
    names = sorted(PAYLOADS)
    for i, name in enumerate(names):
        p = PAYLOADS[name]
        if "\n" in p:
            continue
        reads = (i % 4) << 1
        # Alternate framings; every payload once.
        if i % 2 == 0:
            write(t, "nl_" + name, bytes([reads]) + newline(p))
        else:
            write(t, "len_" + name, bytes([1 | reads]) + length(p))
    all_small = [PAYLOADS[n] for n in ("add", "notify", "batch", "echo")]
    write(t, "nl_pipeline", b"\x00" + newline(*all_small))
    write(t, "len_pipeline", b"\x01" + length(*all_small))
    write(t, "nl_crlf_blank", b"\x02" + b"\r\n  \n" +
          b(PAYLOADS["add"]) + b"\r\n\t\r\n" + b(PAYLOADS["echo"]))
    write(t, "nl_oversized_small_limit", bytes([1 << 3]) +
          newline(PAYLOADS["walk"], PAYLOADS["add"].replace("1,2", "3,4")))
    write(t, "nl_oversized_blank", bytes([1 << 3]) + b" " * 100 + b"\n" +
          b(PAYLOADS["scalar"]) + b"\n")
    write(t, "len_oversized", bytes([1 | 1 << 3]) +
          length(PAYLOADS["walk"], PAYLOADS["add"]))
    write(t, "len_huge_prefix", b"\x01\xff\xff\xff\xff" + b(PAYLOADS["add"]))
    write(t, "len_zero", b"\x01" + length("", PAYLOADS["add"]))
    write(t, "len_partial", b"\x01" + length(PAYLOADS["add"])[:-3])
    write(t, "len_small_batch_response", bytes([1 | 2 << 3 | 1 << 1]) +
          length(PAYLOADS["batch"], PAYLOADS["huge"]))
    write(t, "nl_all_small", bytes([3 << 3 | 3 << 1]) +
          newline(PAYLOADS["batch"], PAYLOADS["huge_numbers"],
                  PAYLOADS["echo"]))
    write(t, "nl_eof_no_newline", b"\x00" + b(PAYLOADS["add"]))
    write(t, "empty", b"")


def diff_seeds():
    # fuzz_diff: the payload as is.
    t = "fuzz_diff"
    clear(t)
    for name, p in sorted(PAYLOADS.items()):
        write(t, name, b(p))
    write(t, "batch_4", "[" + ",".join([PAYLOADS["add"]] * 4) + "]")
    write(t, "numbers", req("walk", "[0,-0,0.0,1e5,1E-5,-1.25e+10,"
                            "100000000000000000000000000000,"
                            "0.000000000000000000000000000001]"))
    write(t, "strings", req("walk", '["\\"\\\\\\/\\b\\f\\n\\r\\t",'
                            '"\\u0000\\u001f\\u007f\\u2028",'
                            '"\\ud834\\udd1e","\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"]'))
    write(t, "newlines_in_ws", "{\n\"jsonrpc\":\"2.0\",\r\n\"method\":\"echo\","
          "\"params\":[1,\n2],\"id\":1}")
    write(t, "empty", b"")


def frame_seeds():
    # fuzz_frame: flags byte (bit 0 length, bits 1-3 max index into
    # 0,1,2,7,64,300,65536,UINT32_MAX, bits 4-5 reads), then the stream.
    t = "fuzz_frame"
    clear(t)
    lines = b"abc\n\r\n  \n{\"a\":1}\r\nlast"
    for mx in (0, 3, 4, 6, 7):
        for reads in (0, 1, 3):
            write(t, "nl_max%d_reads%d" % (mx, reads),
                  bytes([mx << 1 | reads << 4]) + lines)
    long_line = b"x" * 400 + b"\r\n" + b"y" * 10 + b"\n" + b" " * 400 + b"\n"
    write(t, "nl_long_lines", bytes([5 << 1 | 2 << 4]) + long_line)
    write(t, "nl_long_cr_split", bytes([4 << 1 | 1 << 4]) + b"z" * 65 +
          b"\r" + b"\n" + b"ok\n")
    frames = length(b"", b"a", b"\n\n", b"x" * 70)
    for mx in (0, 3, 4, 6):
        for reads in (0, 2):
            write(t, "len_max%d_reads%d" % (mx, reads),
                  bytes([1 | mx << 1 | reads << 4]) + frames)
    write(t, "len_partial", bytes([1 | 6 << 1]) + frames + b"\x00\x00\x01")
    write(t, "len_huge", bytes([1 | 7 << 1]) + b"\xff\xff\xff\xff" + b"tail")
    write(t, "empty", b"")


def http_seeds():
    # fuzz_http: flags byte (bit 0 content-length framing, bits 1-2 limits,
    # bits 3-4 reads, bit 5 auth), then the stream.
    t = "fuzz_http"
    clear(t)
    add = req("math.add", "[1,2]").encode()

    def post(body, extra=b""):
        return (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Type: "
                b"application/json\r\n" + extra +
                b"Content-Length: %d\r\n\r\n" % len(body) + body)

    chunked = (b"POST /rpc HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5;x=y\r\n" + add[:5] + b"\r\n%x\r\n" % (len(add) - 5) +
               add[5:] + b"\r\n0\r\nTrailer: t\r\n\r\n")
    seeds = {
        "call": post(add),
        "pipelined": post(add) + chunked + post(req("echo", "[1]", notify=True).encode())
        + b"GET /health HTTP/1.1\r\n\r\nGET /metrics HTTP/1.0\r\n\r\n",
        "batch": post(("[" + req("math.add", "[1,2]") + "," + req("nope") + "]").encode()),
        "expect": post(add, b"Expect: 100-continue\r\n"),
        "close": post(add, b"Connection: close\r\n") + post(add),
        "http10": b"POST / HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: %d"
        b"\r\n\r\n" % len(add) + add,
        "wrong_type": post(add).replace(b"application/json", b"text/plain"),
        "get_root": b"GET / HTTP/1.1\r\n\r\n" + post(add),
        "huge_chunk": b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffff\r\n",
        "chunk_overflow": b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"1ffffffffffffffff\r\n",
        "long_header": b"POST / HTTP/1.1\r\nX-A: " + b"a" * 300 + b"\r\n\r\n",
        "garbage": b"\x16\x03\x01\x00garbage\r\n\r\n",
        # The same head but for its Content-Length digits (the memo), then
        # a head that differs in one byte.
        "same_head": post(add) + post(req("echo", "[" + "1," * 50 + "1]").encode())
        + post(add) + post(add).replace(b"application/json", b"application/jsox"),
        # A header folded over two lines (obs-fold): 400.
        "folded": post(add).replace(b"Content-Length: ", b"Content-Length:\r\n "),
    }
    for name, data in seeds.items():
        for lim, reads in ((0, 0), (1, 1), (3, 2)):
            write(t, "http_%s_l%d_r%d" % (name, lim, reads),
                  bytes([lim << 1 | reads << 3]) + data)
    # With auth (bit 5): a good token, then none, then /health (not asked).
    auth = (post(add, b"Authorization: Bearer good\r\n") +
            b"GET /health HTTP/1.1\r\n\r\n" + post(add))
    for lim, reads in ((0, 0), (1, 1), (3, 2)):
        write(t, "http_auth_l%d_r%d" % (lim, reads),
              bytes([1 << 5 | lim << 1 | reads << 3]) + auth)
    lsp = b"".join(b"Content-Length: %d\r\n\r\n" % len(x) + x
                   for x in (add, req("echo", "[2]", notify=True).encode(), add))
    for lim, reads in ((0, 0), (1, 1), (3, 3)):
        write(t, "lsp_l%d_r%d" % (lim, reads), bytes([1 | lim << 1 | reads << 3]) + lsp)
    write(t, "lsp_no_length", b"\x01Content-Type: x\r\n\r\n{}")
    write(t, "lsp_too_large", b"\x03Content-Length: 100000\r\n\r\n")
    write(t, "empty", b"")


def access_seeds():
    # fuzz_access: flags byte (bits 0-1 backend, 2-3 framing: newline,
    # length, http, content-length; 4-5 reads), then the stream. Each seed
    # calls the denied and hidden methods in the shapes that once took the
    # full params check (issue 21), beside the served control g.ok.
    t = "fuzz_access"
    clear(t)
    shapes = {
        "positional": "[1,\"t\"]",
        "named": '{"n":1,"tag":"t"}',
        "named_reordered": '{"tag":"t","n":1}',
        "escaped_name": '{"\\u006e":1}',
        "float_integer": "[100.0]",
        "bad_params": '{"n":"x","zz":1}',
        "no_params": None,
        "padded": '{"n":1,"tag":"' + "p" * 300 + '"}',
    }
    targets = ("g.deny", "g.deny_secret", "g.deny_named", "g.deny_plain",
               "g.deny_any", "g.deny_defer", "g.hide", "g.hide_plain", "g.ok",
               "g.plain")

    def calls(params, i):
        out = []
        for m in targets:
            out.append(req(m, params, str(i)))
            out.append(req(m, params, notify=True))
        out.append("[" + ",".join(req(m, params, str(i)) for m in targets) +
                   "," + req("g.deny", params, notify=True) + "]")
        return out

    def http(payloads, lsp):
        out = b""
        for p in payloads:
            body = b(p)
            if lsp:
                out += b"Content-Length: %d\r\n\r\n" % len(body) + body
            else:
                out += (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Type: "
                        b"application/json\r\nContent-Length: %d\r\n\r\n"
                        % len(body) + body)
        return out

    frame = {0: newline, 1: length,
             2: lambda *ps: http(ps, False), 3: lambda *ps: http(ps, True)}
    i = 1
    for name, params in shapes.items():
        payloads = calls(params, i)
        i += 1
        for backend in range(4):
            for framing in range(4):
                reads = (backend + framing) % 4 if name == "padded" else 0
                write(t, "%s_b%d_f%d" % (name, backend, framing),
                      bytes([backend | framing << 2 | reads << 4]) +
                      frame[framing](*payloads))
    # The named methods' long and quoted names, exactly and escaped.
    named = ['{"secret_alpha_beta_gamma":"x"}',
             '{"secret_q\\"x":1,"secret_alpha_beta_gamma":"x"}',
             '{"secret_alpha_beta_gamm\\u0061":"x"}']
    for k, params in enumerate(named):
        write(t, "long_names_%d" % k, bytes([k]) + newline(
            req("g.deny_named", params), req("g.ok", params)))
    write(t, "empty", b"")


CONF = open(os.path.join(HERE, "..", "..", "conf", "jrpcd.conf"), "rb").read()


def config_seeds():
    t = "fuzz_config"
    clear(t)
    listen = "[listen local]\nunix = /tmp/x.sock\n"
    seeds = {
        "jrpcd_conf_listen": CONF[:CONF.index(b"[plugin math]")],
        "minimal_unix": listen,
        "minimal_tcp": "[listen t]\ntcp = 127.0.0.1:7400\nframing = length\n",
        "tcp_v6": "[listen t]\ntcp = [::1]:7400\n",
        "server_all": "[server]\nworkers = 4\nparser = simdjson\n"
                      "plugin_dir = /dev\nlog_level = debug\n"
                      "strict_plugins = off\nmax_frame_bytes = 64\n"
                      "max_batch = 1000000\nmax_response_bytes = 4294967295\n"
                      "max_connections = 1\nidle_timeout_ms = 0\n"
                      "shutdown_timeout_ms = 4294967295\n"
                      "output_high_water = 1099511627776\n"
                      "max_pending_calls = 1\n"
                      "max_pending_calls_total = 100000000\n" + listen,
        "server_rest": "[server]\nparser = native\n"
                       "parser_auto_threshold = measured\n"
                       "early_reply_frames = 0\n" + listen + "stats = no\n"
                       "[listen t]\ntcp = 127.0.0.1:1\nstats = yes\n",
        "plugins": listen + "[plugin a]\npath = /dev/null\nsize = 1000\n"
                   "mode = fast ; comment\n[plugin b]\npath = null\n"
                   "[server]\nplugin_dir = /dev/\n",
        "unix_options": "[listen u]\n  unix = /run/a.sock\n  mode = 0600\n"
                        "  owner = root\n  group = 0\n",
        "comments_bom": "\xef\xbb\xbf# comment\n; another\n\n" + listen +
                        "framing = newline ; inline\n",
        "crlf": listen.replace("\n", "\r\n"),
        "err_unknown_key": "[server]\nfoo = 1\n" + listen,
        "err_twice": listen + "unix = /tmp/y\n",
        "err_number": "[server]\nworkers = -1\nmax_batch = 1k\n" + listen,
        "err_overflow": "[server]\nmax_response_bytes = 99999999999999999999\n",
        "err_tcp_unix_keys": "[listen t]\ntcp = 0.0.0.0:1\nmode = 0600\n",
        "err_both": "[listen t]\ntcp = 0.0.0.0:1\nunix = /a\n",
        "err_bad_addr": "[listen t]\ntcp = localhost:80\n",
        "err_bad_port": "[listen t]\ntcp = [::]:65536\n",
        "err_long_path": "[listen u]\nunix = /" + "p" * 120 + "\n",
        "err_no_listen": "[server]\nworkers = 1\n",
        "err_empty_listen": "[listen x]\n[listen y]\nunix = /a\n",
        "err_plugin_missing": listen + "[plugin p]\npath = /nonexistent.so\n",
        "err_plugin_no_path": listen + "[plugin p]\nkey = v\n",
        "err_plugin_dup_key": listen + "[plugin p]\npath = /dev/null\n"
                              "k = 1\nk = 2\n",
        "err_section": "[server\n" + listen,
        "err_section_name": "[listen]\n[server x]\n[other y]\n",
        "err_text_after_header": "[server] x\n",
        "err_outside": "workers = 1\n" + listen,
        "err_not_kv": listen + "just words\n",
        "err_long_line": listen + "# " + "c" * 300 + "\n",
        "err_dup_section": listen + listen,
        "err_nul": listen + "mode = 06\x0060\n",
        "empty": "",
    }
    for name, text in seeds.items():
        write(t, name, b(text))


def ws_frame(op, payload, fin=True, key=b"\0\0\0\0", masked=True):
    """A client frame (fuzz_ws): masked, by default with a zero key so that
    the payload stays readable to the fuzzer's mutations."""
    n = len(payload)
    h = bytes([(0x80 if fin else 0) | op])
    m = 0x80 if masked else 0
    if n < 126:
        h += bytes([m | n])
    elif n < 65536:
        h += bytes([m | 126]) + struct.pack(">H", n)
    else:
        h += bytes([m | 127]) + struct.pack(">Q", n)
    if not masked:
        return h + payload
    return h + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))


def ws_seeds():
    # fuzz_ws: flags byte (bits 0-1 limit, bits 2-3 reads, bit 4 the
    # handshake put before the stream, bit 5 keepalive ticks), the stream.
    t = "fuzz_ws"
    clear(t)
    add = req("math.add", "[1,2]").encode()
    hs = (b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
          b"Sec-WebSocket-Version: 13\r\n")
    frames = {
        "call": ws_frame(1, add),
        "batch_binary": ws_frame(2, b"[" + add + b"," + add + b"]"),
        "keyed": ws_frame(1, add, key=b"\x37\xfa\x21\x3d"),
        "fragments_ping": ws_frame(1, add[:9], fin=False) + ws_frame(9, b"hi")
        + ws_frame(0, add[9:20], fin=False) + ws_frame(0, add[20:]),
        "close": ws_frame(1, add) + ws_frame(8, b"\x03\xe8bye") + ws_frame(1, add),
        "unmasked": ws_frame(1, add, masked=False),
        "not_utf8": ws_frame(1, b'"\xff"'),
        "pong": ws_frame(10, b"") + ws_frame(1, add),
        "long": ws_frame(1, req("echo", '["' + "x" * 400 + '"]').encode()),
        "stray_continuation": ws_frame(0, b"x"),
    }
    for name, data in frames.items():
        for lim, reads in ((0, 0), (1, 1), (3, 2)):
            write(t, "ws_%s_l%d_r%d" % (name, lim, reads),
                  bytes([lim | reads << 2 | 1 << 4]) + data)
    write(t, "ws_ticks", bytes([0 | 3 << 2 | 1 << 4 | 1 << 5]) + frames["call"] * 3)
    # Handshakes written out: good (with a listed Origin), refused.
    write(t, "hs_origin_ok", b"\x00" + hs + b"Origin: https://ok.example\r\n\r\n"
          + frames["call"])
    write(t, "hs_origin_bad", b"\x00" + hs + b"Origin: https://evil.example\r\n\r\n")
    write(t, "hs_version", b"\x00" + hs.replace(b": 13", b": 8") + b"\r\n")
    write(t, "hs_no_connection", b"\x04" + hs.replace(b"Connection: Upgrade\r\n", b"")
          + b"\r\n")
    write(t, "hs_after_post", b"\x00" + b"POST / HTTP/1.1\r\nContent-Type: "
          b"application/json\r\nContent-Length: %d\r\n\r\n" % len(add) + add
          + hs + b"\r\n" + frames["call"])
    write(t, "preflight", b"\x00OPTIONS / HTTP/1.1\r\nOrigin: https://ok.example\r\n\r\n")


if __name__ == "__main__":
    request_seeds()
    diff_seeds()
    frame_seeds()
    http_seeds()
    ws_seeds()
    access_seeds()
    config_seeds()
