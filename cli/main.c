/* main.c - jrpc's command line: options, the endpoint, and which mode
 * runs. See jrpc(1) (cli/jrpc.1). */
#include "args.h"
#include "default_socket.h"
#include "jrpc.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef JRPC_VERSION
#define JRPC_VERSION "unknown"
#endif

/* The installed config's socket, tried before the built-in config's. */
#define SYSTEM_SOCKET "/run/jrpcd/jrpcd.sock"

static void usage(FILE *f) {
  fputs(
      "usage: jrpc [OPTION]... [URL] METHOD [ARG]...\n"
      "       jrpc [OPTION]... [URL] -l | -d METHOD | --batch FILE | --stdin\n"
      "       jrpc [OPTION]... [URL]      (a prompt, on a terminal)\n"
      "\n"
      "ARG: a JSON value (a word that is not JSON is a string, unless it\n"
      "     starts like JSON: {, [, \" or a number), by position; or\n"
      "     NAME=TEXT (a string) and NAME:=JSON, by name; NAME=@FILE and\n"
      "     NAME:=@FILE read the value from FILE. Options go before METHOD.\n"
      "\n"
      "  -u, --unix PATH       connect to the Unix socket PATH\n"
      "  -t, --tcp HOST:PORT   connect over TCP\n"
      "  -t, --tcp URL         http:// or https://HOST[:PORT][/PATH]:\n"
      "                        JSON-RPC over HTTP POST; ws:// or wss://:\n"
      "                        over a WebSocket\n"
      "  -e, --endpoint URL    unix:PATH, tcp://HOST:PORT, tls://HOST:PORT,\n"
      "                        http://, https://, ws:// or wss://\n"
      "  -f, --framing newline|length|http|content-length|websocket\n"
      "                        (default newline)\n"
      "  -l, --list            list the methods (rpc.discover)\n"
      "  -d, --describe METHOD show a method's params, result and examples\n"
      "  -n, --notify          send a notification: no id, no reply\n"
      "      --follow          METHOD subscribes (kv.watch): each\n"
      "                        notification's result printed as it comes;\n"
      "                        Ctrl-C unsubscribes (not over http://)\n"
      "      --id ID           the request id (JSON, else a string; "
      "default 1)\n"
      "      --params JSON     the whole params (an array or object), "
      "instead of ARGs\n"
      "  -r, --raw-output      a string result as its text, unquoted\n"
      "  -v, --verbose         the request on stderr as it is sent\n"
      "      --dry-run         the request on stdout, not sent (no "
      "connection)\n"
      "      --wait[=MS]       retry connecting until the server listens "
      "(default\n"
      "                        30000 ms)\n"
      "      --batch FILE      lines of METHOD ARG... as one batch (- is "
      "stdin)\n"
      "      --stdin           JSON requests line by line, replies paired "
      "by id\n"
      "      --compact         the result on one line\n"
      "      --raw             the whole response, as received\n"
      "      --color, --no-color   (default: colour on a terminal, unless "
      "NO_COLOR)\n"
      "      --no-check        do not ask rpc.discover to check params\n"
      "      --cafile FILE     TLS (tls://, https://; or -t HOST:PORT, which\n"
      "                        it turns to TLS): the server's certificate\n"
      "                        must verify against FILE's CAs (default: the\n"
      "                        system's trust store)\n"
      "      --servername NAME TLS: the name sent (SNI) and checked in the\n"
      "                        server's certificate (default: the host)\n"
      "      --insecure        TLS: check neither the server's certificate\n"
      "                        chain nor its name (said on stderr)\n"
      "      --cert FILE       TLS: our client certificate (PEM)\n"
      "      --key FILE        TLS: its key (default: in --cert's file)\n"
      "      --token-file FILE a bearer token sent to HTTP endpoints (else\n"
      "                        $JRPC_TOKEN)\n"
      "  -H, --header 'NAME: VALUE'  an HTTP header for every request (or\n"
      "                        the WebSocket handshake)\n"
      "      --timeout MS      give up after MS milliseconds (default "
      "30000)\n"
      "  -h, --help            this help\n"
      "  -V, --version         the version\n"
      "\n"
      "Endpoint: a URL before METHOD, -u, -t or -e, else $JRPC_URL, else\n"
      "$JRPC_SOCKET (a path), else $JRPC_ADDRESS (HOST:PORT or URL), "
      "else\n" SYSTEM_SOCKET
      " if it exists, else $XDG_RUNTIME_DIR/jrpcd.sock, else\n"
      "${TMPDIR:-/tmp}/jrpcd-UID/jrpcd.sock\n"
      "(jrpcd's built-in config). A default socket must be the caller's or\n"
      "root's: another user's is refused.\n"
      "Exit status: 0 result, 1 JSON-RPC error, 2 usage or connection "
      "error\n"
      "(an HTTP status other than 2xx, 401 among them), 3 timeout.\n"
      "Notifications that come before a reply (progress) go to stderr.\n",
      f);
}

/* Whether WORD names an endpoint as a URL: unix:PATH, tcp:// or
 * tls://HOST:PORT, http://, https://, ws:// or wss://. */
static bool is_url(const char *word) {
  return !strncmp(word, "unix:", 5) || !strncasecmp(word, "tcp://", 6) ||
         !strncasecmp(word, "tls://", 6) || jc_is_http_url(word);
}

/* WORD as the endpoint: a URL (is_url), else HOST:PORT (-t); NULL: none
 * yet. -1 with the reason said; WHAT names where it came from. */
static int set_endpoint(jc_endpoint *ep, const char *word, const char *what) {
  char err[600] = "";
  ep->unix_path = ep->tcp = ep->url = ep->path = ep->host = NULL;
  ep->tls = false;
  if (!word || !is_url(word)) {
    ep->tcp = word;
    return 0;
  }
  ep->url = word;
  if (!strncmp(word, "unix:", 5)) {
    ep->unix_path = word + 5;
    if (!*ep->unix_path)
      snprintf(err, sizeof err, "%s: no socket path after unix:", word);
  } else if (!jc_is_http_url(word)) {
    ep->tcp = word + 6;
    ep->tls = word[1] == 'l' || word[1] == 'L';
    if (strchr(ep->tcp, '/'))
      snprintf(err, sizeof err, "%s: a %.3s:// URL has no path", word, word);
  } else {
    jc_http_url(word, ep, err, sizeof err);
  }
  if (!*err)
    return 0;
  jc_warn("%s: %s", what, err);
  return -1;
}

/* The default endpoint, when neither -u nor -t was given; -1 when the
 * default socket's private directory is not safe (said on stderr). A path
 * from JRPC_SOCKET is the user's choice, like -u; the defaults are checked
 * for who made them on every connect (transport.c). */
static int default_endpoint(jc_endpoint *ep, char *buf, size_t cap) {
  const char *sock = getenv("JRPC_SOCKET"), *addr = getenv("JRPC_ADDRESS");
  const char *url = getenv("JRPC_URL");
  struct stat st;
  char note[4400], why[4400];
  if (url && *url)
    return set_endpoint(ep, url, "JRPC_URL");
  if (sock && *sock) {
    ep->unix_path = sock;
    return 0;
  }
  if (addr && *addr)
    return set_endpoint(ep, addr, "JRPC_ADDRESS");
  ep->default_path = true;
  if (lstat(SYSTEM_SOCKET, &st) == 0) {
    ep->unix_path = SYSTEM_SOCKET;
    return 0;
  }
  if (jrpc_default_socket(buf, cap, 0, note, sizeof note, why, sizeof why)) {
    jc_warn("%s", why);
    return -1;
  }
  if (note[0])
    jc_warn("%s", note);
  ep->unix_path = buf;
  return 0;
}

static int parse_int(const char *s, const char *what, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || end == s || v < 1 || v > 86400000) {
    jc_warn("%s: \"%s\" is not a number of milliseconds from 1 to 86400000",
            what, s);
    return -1;
  }
  *out = (int)v;
  return 0;
}

/* Which TLS the endpoint asks for, checked: on for tls:// and https://,
 * and for -t HOST:PORT with --cafile; the server's certificate verified
 * against --cafile, else the system's trust store, unless --insecure
 * (said here, once). -1 after saying what does not fit. */
static int tls_options(jc_endpoint *ep) {
  if (ep->cafile && !ep->tcp) {
    jc_warn("TLS (--cafile) is for a TCP endpoint (tls://HOST:PORT, an "
            "https:// URL, or -t HOST:PORT)");
    return -1;
  }
  if (ep->url && ep->tcp && !ep->tls && ep->cafile) {
    jc_warn("--cafile: %s is plain (https:// and tls:// are over TLS)",
            ep->url);
    return -1;
  }
  ep->tls |= ep->cafile != NULL;
  const char *tls_only = ep->cert         ? "--cert"
                         : ep->key        ? "--key"
                         : ep->servername ? "--servername"
                         : ep->insecure   ? "--insecure"
                                          : NULL;
  if (tls_only && !ep->tls) {
    jc_warn("%s is for TLS endpoints (tls://HOST:PORT, https://, or -t "
            "HOST:PORT with --cafile)",
            tls_only);
    return -1;
  }
  if (ep->insecure && ep->cafile) {
    jc_warn("--insecure checks nothing that --cafile would: give one of "
            "them");
    return -1;
  }
  if (ep->servername && (!*ep->servername || strpbrk(ep->servername, "/ "))) {
    jc_warn("--servername %s: not a host name or address", ep->servername);
    return -1;
  }
  if (ep->insecure)
    jc_warn("--insecure: the server's certificate chain and host name are "
            "not verified: whoever answers at %s gets what is sent",
            ep->tcp);
  return 0;
}

/* A usage error: its one line, and where the rest is. */
static int usage_error(void) {
  fputs("Try 'jrpc --help' for more.\n", stderr);
  return JC_EXIT_USAGE;
}

enum {
  OPT_BATCH = JC_OPT_FIRST_FREE,
  OPT_STDIN,
  OPT_COLOR,
  OPT_NO_COLOR,
  OPT_TIMEOUT,
  OPT_WAIT,
  OPT_CAFILE,
  OPT_SERVERNAME,
  OPT_INSECURE,
  OPT_CERT,
  OPT_KEY,
  OPT_TOKEN_FILE,
  OPT_FOLLOW,
};

/* -H "Name: value": appended to *headers as a line of the request head.
 * The fields jrpc writes itself, or that would change how the request is
 * framed, are refused, and so is any byte that could end the line. */
static int add_header(const char *arg, char **headers) {
  static const char *const own[] = {"host",
                                    "content-length",
                                    "content-type",
                                    "transfer-encoding",
                                    "connection",
                                    "expect",
                                    "upgrade",
                                    "sec-websocket-key",
                                    "sec-websocket-version"};
  size_t name = strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
                            "WXYZ0123456789!#$%&'*+-.^_`|~");
  const char *v = arg + name;
  if (name == 0 || *v != ':') {
    /* Only the name's part: the rest may be a secret mistyped. */
    jc_warn("-H %.*s...: not a header (Name: value)", (int)name, arg);
    return -1;
  }
  for (v++; *v == ' ' || *v == '\t'; v++)
    ;
  for (const char *p = v; *p; p++)
    if ((unsigned char)*p < 0x20 && *p != '\t') {
      jc_warn("-H %.*s: the value has a control character", (int)name, arg);
      return -1;
    }
  for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
    if (strlen(own[i]) == name && !strncasecmp(arg, own[i], name)) {
      jc_warn("-H %.*s: jrpc writes that header itself", (int)name, arg);
      return -1;
    }
  size_t had = *headers ? strlen(*headers) : 0;
  char *more = realloc(*headers, had + name + strlen(v) + 5);
  if (!more) {
    jc_warn("-H: out of memory");
    return -1;
  }
  sprintf(more + had, "%.*s: %s\r\n", (int)name, arg, v);
  *headers = more;
  return 0;
}

/* A bearer token as RFC 6750 has it (token68), as jrpcd takes it. */
static bool token_ok(const char *t) {
  size_t n = strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                       "0123456789-._~+/");
  n += strspn(t + n, "=");
  return n > 0 && n <= 512 && t[n] == '\0';
}

/* --token-file FILE: its first line, into buf. Like ssh with its keys, a
 * file others may read is refused: the token is as good as a password. */
static int read_token(const char *file, char *buf, size_t cap) {
  FILE *f = fopen(file, "r");
  struct stat st;
  if (!f || fstat(fileno(f), &st) != 0) {
    jc_warn("--token-file %s: %s", file, strerror(errno));
    if (f)
      fclose(f);
    return -1;
  }
  if (st.st_mode & S_IRWXO) {
    jc_warn("--token-file %s: mode %04o lets others read it (chmod o-rwx)",
            file, (unsigned)(st.st_mode & 07777));
    fclose(f);
    return -1;
  }
  if (!fgets(buf, (int)cap, f))
    buf[0] = '\0';
  fclose(f);
  buf[strcspn(buf, "\r\n")] = '\0';
  return 0;
}

int main(int argc, char **argv) {
  static const struct option own[] = {
      {"unix", required_argument, NULL, 'u'},
      {"tcp", required_argument, NULL, 't'},
      {"endpoint", required_argument, NULL, 'e'},
      {"framing", required_argument, NULL, 'f'},
      {"list", no_argument, NULL, 'l'},
      {"describe", required_argument, NULL, 'd'},
      {"batch", required_argument, NULL, OPT_BATCH},
      {"stdin", no_argument, NULL, OPT_STDIN},
      {"color", no_argument, NULL, OPT_COLOR},
      {"no-color", no_argument, NULL, OPT_NO_COLOR},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"wait", optional_argument, NULL, OPT_WAIT},
      {"cafile", required_argument, NULL, OPT_CAFILE},
      {"servername", required_argument, NULL, OPT_SERVERNAME},
      {"insecure", no_argument, NULL, OPT_INSECURE},
      {"cert", required_argument, NULL, OPT_CERT},
      {"key", required_argument, NULL, OPT_KEY},
      {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
      {"header", required_argument, NULL, 'H'},
      {"follow", no_argument, NULL, OPT_FOLLOW},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0},
  };
  /* jrpc's own options, then the call options the prompt reads too. */
  enum { OWN = sizeof own / sizeof own[0] - 1 };
  struct option longs[OWN + 16];
  size_t ncall = 0;
  memcpy(longs, own, sizeof own);
  while (jc_call_longs[ncall++].name)
    ;
  memcpy(longs + OWN, jc_call_longs, ncall * sizeof *longs);
  /* Static, as headers below: an early return for a usage error leaves
   * --id's and --params' values reachable, not leaked. */
  static jc_opts o;
  o = (jc_opts){.ep = {.framing = JC_NEWLINE, .timeout_ms = 30000},
                .check = true,
                .id = json_integer(1)};
  const char *describe = NULL, *batch = NULL;
  bool list = false, passthrough = false;
  int color = -1, c, modes = 0;
  char sockbuf[4200];
  char token[600];
  const char *token_file = NULL, *url_arg = NULL, *framing = NULL;
  /* -H's lines, kept (and reachable) for the program's life. */
  static char *headers;
  /* '+': options end at METHOD, so "-1" after it is an argument. A URL
   * before METHOD is the endpoint, and options may follow it. */
options:
  while ((c = getopt_long(argc, argv, "+u:t:e:f:H:ld:hV" JC_CALL_SHORTS, longs,
                          NULL)) != -1) {
    switch (c) {
    case 'u':
      set_endpoint(&o.ep, NULL, "-u");
      o.ep.unix_path = optarg;
      break;
    case 't':
    case 'e':
      if (set_endpoint(&o.ep, optarg, c == 't' ? "-t" : "-e") < 0)
        return usage_error();
      break;
    case 'f':
      framing = optarg;
      o.ep.framing = jc_framing_named(optarg);
      if (o.ep.framing == JC_FRAMINGS) {
        jc_warn("-f: \"%s\" is not newline, length, http, content-length or "
                "websocket",
                optarg);
        return usage_error();
      }
      break;
    case 'l':
      list = true;
      modes++;
      break;
    case 'd':
      describe = optarg;
      modes++;
      break;
    case OPT_BATCH:
      batch = optarg;
      modes++;
      break;
    case OPT_STDIN:
      passthrough = true;
      modes++;
      break;
    case OPT_COLOR:
    case OPT_NO_COLOR:
      color = c == OPT_COLOR;
      break;
    case OPT_TIMEOUT:
      if (parse_int(optarg, "--timeout", &o.ep.timeout_ms) < 0)
        return usage_error();
      break;
    case OPT_WAIT:
      o.ep.wait_ms = 30000;
      if (optarg && parse_int(optarg, "--wait", &o.ep.wait_ms) < 0)
        return usage_error();
      break;
    case OPT_CAFILE:
      o.ep.cafile = optarg;
      break;
    case OPT_SERVERNAME:
      o.ep.servername = optarg;
      break;
    case OPT_INSECURE:
      o.ep.insecure = true;
      break;
    case OPT_CERT:
      o.ep.cert = optarg;
      break;
    case OPT_KEY:
      o.ep.key = optarg;
      break;
    case 'H':
      if (add_header(optarg, &headers) < 0)
        return usage_error();
      o.ep.headers = headers;
      break;
    case OPT_TOKEN_FILE:
      token_file = optarg;
      break;
    case OPT_FOLLOW:
      o.follow = true;
      break;
    case 'h':
      usage(stdout);
      return JC_EXIT_OK;
    case 'V':
      printf("jrpc %s\n", JRPC_VERSION);
      return JC_EXIT_OK;
    default:
      if (c != '?' && jc_call_option(&o, c, optarg) == 0)
        break;
      return usage_error();
    }
  }
  if (!url_arg && optind < argc && is_url(argv[optind])) {
    url_arg = argv[optind++];
    goto options;
  }
  if (url_arg && (o.ep.unix_path || o.ep.tcp)) {
    jc_warn("%s: an endpoint is given by -u, -t or -e already", url_arg);
    return usage_error();
  }
  if (url_arg && set_endpoint(&o.ep, url_arg, "URL") < 0)
    return usage_error();
  int nargs = argc - optind;
  if (modes > 1 || (modes && nargs)) {
    jc_warn("-l, -d, --batch, --stdin and a METHOD exclude each other");
    return usage_error();
  }
  if (!o.ep.unix_path && !o.ep.tcp &&
      default_endpoint(&o.ep, sockbuf, sizeof sockbuf) != 0)
    return JC_EXIT_USAGE; /* not a usage error: --help has nothing on it */
  /* http(s):// and ws(s):// URLs name their framing (jc_http_url). */
  bool http_url = o.ep.url && jc_is_http_url(o.ep.url);
  if (http_url)
    o.ep.framing = strncasecmp(o.ep.url, "ws", 2) ? JC_HTTP : JC_WEBSOCKET;
  bool over_http = o.ep.framing == JC_HTTP || o.ep.framing == JC_WEBSOCKET;
  if (http_url && framing && jc_framing_named(framing) != o.ep.framing) {
    jc_warn("-f %s: %s is a%s endpoint", framing, o.ep.url,
            o.ep.framing == JC_HTTP ? "n HTTP" : " WebSocket");
    return usage_error();
  }
  if (over_http && !http_url) { /* -f http, -f websocket */
    o.ep.path = "/";
    o.ep.host = o.ep.tcp ? o.ep.tcp : "localhost";
  }
  if (headers && !over_http) {
    jc_warn("-H: headers are for HTTP endpoints (http://, https:// or -f "
            "http) and WebSocket ones (ws://, wss:// or -f websocket)");
    return usage_error();
  }
  if (o.follow && o.ep.framing == JC_HTTP) {
    jc_warn("--follow: server push needs a streaming endpoint (unix:, "
            "tcp://, tls://, ws:// or wss://): over HTTP POST no "
            "notification can reach jrpc");
    return usage_error();
  }
  if (o.follow && (modes || nargs == 0 || o.notify)) {
    jc_warn("--follow: give one METHOD (a subscription method, with its "
            "ARGs), without -n");
    return usage_error();
  }
  if (tls_options(&o.ep) < 0)
    return usage_error();
  if (token_file && read_token(token_file, token, sizeof(token)) < 0)
    return usage_error();
  o.ep.token = token_file ? token : getenv("JRPC_TOKEN");
  if (o.ep.token && !*o.ep.token && !token_file)
    o.ep.token = NULL; /* JRPC_TOKEN= set empty: none */
  if (o.ep.token && !token_ok(o.ep.token)) {
    jc_warn("%s: not a bearer token (1 to 512 of A-Z a-z 0-9 - . _ ~ + /, "
            "then = padding)",
            token_file ? "--token-file" : "JRPC_TOKEN");
    return usage_error();
  }
  for (const char *l = headers; o.ep.token && l; l = strstr(l, "\r\n")) {
    l += l != headers ? 2 : 0;
    if (!strncasecmp(l, "authorization:", 14)) {
      jc_warn("-H Authorization: and a bearer token (--token-file or "
              "JRPC_TOKEN) both fill that header; give one of them");
      return usage_error();
    }
  }
  /* Newline and length framing have no place for a token: said when it
   * was asked for. */
  if (token_file && !over_http)
    jc_warn("--token-file: the token goes to HTTP endpoints only, and this "
            "one is %s framed: not sent (ws:// and wss:// carry it too)",
            jc_framings[o.ep.framing].name);
  jc_output_init(&o.out, color);
  if (o.params && (modes || nargs != 1)) {
    jc_warn("--params: %s", nargs > 1 ? "the params are given as ARGs too"
                                      : "give one METHOD after it");
    return usage_error();
  }
  if (o.dry_run && (modes || nargs == 0)) {
    jc_warn("--dry-run: give a METHOD (it shows the request for one call)");
    return usage_error();
  }
  int rc;
  if (list || describe) {
    rc = jc_discovery(&o, describe);
  } else if (batch) {
    rc = jc_batch(&o, batch);
  } else if (passthrough) {
    rc = jc_passthrough(&o);
  } else if (nargs > 0) {
    rc = jc_command(&o, NULL, NULL, nargs, argv + optind);
  } else if (isatty(STDIN_FILENO)) {
    rc = jc_interactive(&o);
  } else {
    jc_warn("no METHOD (and stdin is not a terminal for the prompt)");
    rc = usage_error();
  }
  json_decref(o.id);
  json_decref(o.params);
  return rc;
}
