'use strict';
// Shared plumbing for the Node.js peer servers in this directory: argument
// parsing, listening on a Unix socket or loopback TCP port, and clean shutdown.
// The JSON-RPC handling itself lives in each *_server.js file.

const fs = require('fs');
const net = require('net');

function usage(prog, msg) {
  if (msg) process.stderr.write(`${prog}: ${msg}\n`);
  process.stderr.write(`usage: ${prog} --unix PATH | --tcp PORT [--host ADDR] [--http]\n`);
  process.exit(2);
}

// Returns {unix: string|null, port: number|null, host: string, http: bool}.
// --http: JSON-RPC over HTTP/1.1 POST instead of newline-delimited frames.
function parseArgs(prog, argv) {
  const opts = { unix: null, port: null, host: '127.0.0.1', http: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) usage(prog, `${a} needs a value`);
      return argv[++i];
    };
    if (a === '--unix') opts.unix = next();
    else if (a === '--tcp') {
      const p = Number(next());
      if (!Number.isInteger(p) || p <= 0 || p > 65535) usage(prog, 'bad TCP port');
      opts.port = p;
    } else if (a === '--host') opts.host = next();
    else if (a === '--http') opts.http = true;
    else if (a === '-h' || a === '--help') usage(prog);
    else usage(prog, `unknown argument ${a}`);
  }
  if ((opts.unix === null) === (opts.port === null)) usage(prog, 'give exactly one of --unix or --tcp');
  return opts;
}

// Remove a stale socket left by a previous run; refuse to clobber anything else.
function removeStaleSocket(path) {
  let st;
  try {
    st = fs.lstatSync(path);
  } catch (e) {
    return;
  }
  if (!st.isSocket()) {
    process.stderr.write(`refusing to remove ${path}: exists and is not a socket\n`);
    process.exit(1);
  }
  fs.unlinkSync(path);
}

// Starts `server` (a net.Server or subclass) per `opts`, prints "listening" to
// stderr once bound, and installs SIGTERM/SIGINT handlers that close it,
// unlink the Unix socket and exit 0.
function listen(prog, server, opts) {
  const unlinkSock = () => {
    if (opts.unix !== null) {
      try { fs.unlinkSync(opts.unix); } catch (e) { /* already gone */ }
    }
  };
  server.on('error', (err) => {
    process.stderr.write(`${prog}: ${err.message}\n`);
    unlinkSock();
    process.exit(1);
  });
  const ready = () => process.stderr.write('listening\n');
  if (opts.unix !== null) {
    removeStaleSocket(opts.unix);
    server.listen({ path: opts.unix, backlog: 1024 }, ready);
  } else {
    server.listen({ port: opts.port, host: opts.host, backlog: 1024 }, ready);
  }
  const stop = () => {
    server.close();
    unlinkSock();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

// Reference implementations of the benchmark methods, params by position.
function add(params) {
  return params[0] + params[1];
}
function echo(params) {
  return Array.isArray(params) ? params[0] : params;
}

module.exports = { parseArgs, listen, add, echo };
