#!/usr/bin/env node
'use strict';
// Peer server: jayson (npm "jayson", pinned in package.json).
//
// Transport choice: jayson >= 5.0.0 ships its own newline-delimited stream
// server, `server.tcp()`, which is a net.Server subclass. It splits input on
// its `delimiter` option ('\n' by default, string-aware scan), JSON.parse()s
// each frame, runs it through Server#call, and writes each reply followed by
// the delimiter with one socket.write() per reply, as soon as that reply is
// ready. That is the library's intended stream path, so we use it unchanged
// (only the methods are ours) and listen on either a Unix socket path or a
// loopback TCP port (net.Server#listen accepts both). Note jayson 4.x's TCP
// server wrote replies with no delimiter at all, which is why 5.0.0 is pinned.
//
// Methods: add / math.add ([a, b] -> a + b), echo / echo.echo ([x] -> x).
// Since the methods complete synchronously, replies on a connection come out
// in request order.

const jayson = require('jayson');
const { parseArgs, listen, add, echo } = require('./peer_common');

const PROG = 'jayson_server';
const opts = parseArgs(PROG, process.argv.slice(2));

const methods = {
  add: (params, callback) => callback(null, add(params)),
  echo: (params, callback) => callback(null, echo(params)),
};
methods['math.add'] = methods.add;
methods['echo.echo'] = methods.echo;

const rpc = new jayson.Server(methods);
// --http: jayson's own HTTP server (an http.Server: keep-alive, requests
// of a connection answered in turn), as its documentation serves it.
listen(PROG, opts.http ? rpc.http() : rpc.tcp({ delimiter: '\n' }), opts);
