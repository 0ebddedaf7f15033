#!/usr/bin/env node
'use strict';
// Peer server: json-rpc-2.0 (npm "json-rpc-2.0", pinned in package.json).
//
// The library is transport-agnostic: it offers JSONRPCServer#receiveJSON(text)
// (parse + dispatch, returns a Promise of the reply object or null for a
// notification) and has no socket server of its own. So the framing here is
// ours, kept to what a competent user would write:
//   * net.Server on a Unix socket path or loopback TCP port;
//   * each 'data' chunk is appended to a per-connection buffer and split on
//     '\n'; every complete line goes to receiveJSON() (the library does the
//     JSON.parse and produces parse-error replies itself);
//   * many requests may be in flight per connection; replies are emitted in
//     request order (a slot per request, flushed from the head once resolved);
//   * replies ready in the same event-loop turn are joined and written with
//     one socket.write() from a setImmediate, i.e. one write per input chunk
//     instead of one per reply.
//
// Methods: add / math.add ([a, b] -> a + b), echo / echo.echo ([x] -> x).
// --http serves the same over HTTP POST (see onRequest).

const http = require('http');
const net = require('net');
const { JSONRPCServer } = require('json-rpc-2.0');
const { parseArgs, listen, add, echo } = require('./peer_common');

const PROG = 'jsonrpc2_server';
const opts = parseArgs(PROG, process.argv.slice(2));

const rpc = new JSONRPCServer();
rpc.addMethod('add', add);
rpc.addMethod('math.add', add);
rpc.addMethod('echo', echo);
rpc.addMethod('echo.echo', echo);

const PENDING = Symbol('pending');

function onConnection(sock) {
  sock.setEncoding('utf8');
  let inbuf = '';
  // Replies for requests in order; PENDING until the promise settles,
  // null for notifications (nothing to send).
  const slots = [];
  let head = 0;      // index of the oldest slot not yet flushed
  let out = '';      // bytes ready to write
  let writeScheduled = false;
  let closed = false;

  const writeOut = () => {
    writeScheduled = false;
    if (closed || out.length === 0) return;
    const s = out;
    out = '';
    sock.write(s);
  };

  const flush = () => {
    while (head < slots.length && slots[head] !== PENDING) {
      const r = slots[head];
      slots[head] = undefined;
      head++;
      if (r !== null) out += r;
    }
    if (head === slots.length) {
      slots.length = 0;
      head = 0;
    }
    if (out.length !== 0 && !writeScheduled) {
      writeScheduled = true;
      setImmediate(writeOut);
    }
  };

  const dispatch = (line) => {
    const idx = slots.length;
    slots.push(PENDING); // slots are compacted only when all are flushed, so idx stays valid
    rpc.receiveJSON(line).then(
      (resp) => {
        slots[idx] = resp === null ? null : JSON.stringify(resp) + '\n';
        flush();
      },
      (err) => {
        // receiveJSON maps method errors itself; this is a library failure.
        process.stderr.write(`${PROG}: receiveJSON failed: ${err}\n`);
        slots[idx] = null;
        flush();
      },
    );
  };

  sock.on('data', (chunk) => {
    inbuf += chunk;
    let start = 0;
    let nl;
    while ((nl = inbuf.indexOf('\n', start)) !== -1) {
      let end = nl;
      if (end > start && inbuf.charCodeAt(end - 1) === 13) end--; // tolerate \r\n
      if (end > start) dispatch(inbuf.slice(start, end));
      start = nl + 1;
    }
    inbuf = start === 0 ? inbuf : inbuf.slice(start);
  });
  sock.on('error', () => { /* peer reset; 'close' follows */ });
  sock.on('close', () => { closed = true; });
}

// --http: the library has no HTTP server either; this is the one its
// documentation shows (with express), on Node's own http module: the POST
// body gathered, receiveJSON, 200 with the reply or 204 for notifications.
function onRequest(req, res) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    rpc.receiveJSON(Buffer.concat(chunks).toString('utf8')).then((resp) => {
      if (resp === null) {
        res.writeHead(204);
        res.end();
        return;
      }
      const body = JSON.stringify(resp);
      res.writeHead(200, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(body),
      });
      res.end(body);
    });
  });
}

listen(PROG, opts.http ? http.createServer(onRequest) : net.createServer(onConnection), opts);
