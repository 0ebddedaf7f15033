/* main.c - jrpc's command line: options, the endpoint, and which mode
 * runs. See jrpc(1) (cli/jrpc.1). */
#include "args.h"
#include "default_socket.h"
#include "jrpc.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef JRPC_VERSION
#define JRPC_VERSION "unknown"
#endif

/* The installed config's socket, tried before the built-in config's. */
#define SYSTEM_SOCKET "/run/jrpcd/jrpcd.sock"

void jc_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("jrpc: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void usage(FILE *f) {
  fputs(
      "usage: jrpc [OPTION]... METHOD [ARG]...\n"
      "       jrpc [OPTION]... -l | -d METHOD | --batch FILE | --stdin\n"
      "       jrpc [OPTION]...            (a prompt, on a terminal)\n"
      "\n"
      "ARG: a JSON value (a word that is not JSON is a string), by position;\n"
      "     or NAME=TEXT (a string) and NAME:=JSON, by name.\n"
      "\n"
      "  -u, --unix PATH       connect to the Unix socket PATH\n"
      "  -t, --tcp HOST:PORT   connect over TCP\n"
      "  -f, --framing newline|length   (default newline)\n"
      "  -l, --list            list the methods (rpc.discover)\n"
      "  -d, --describe METHOD show a method's params, result and examples\n"
      "  -n, --notify          send a notification: no id, no reply\n"
      "      --id ID           the request id (JSON, else a string; "
      "default 1)\n"
      "      --batch FILE      lines of METHOD ARG... as one batch (- is "
      "stdin)\n"
      "      --stdin           JSON requests line by line, replies paired "
      "by id\n"
      "      --compact         the result on one line\n"
      "      --raw             the whole response, as received\n"
      "      --color, --no-color   (default: colour on a terminal, unless "
      "NO_COLOR)\n"
      "      --no-check        do not ask rpc.discover to check params\n"
      "      --cafile FILE     TLS (with -t): the server's certificate must\n"
      "                        verify against the CAs in FILE\n"
      "      --cert FILE       TLS: our client certificate (PEM)\n"
      "      --key FILE        TLS: its key (default: in --cert's file)\n"
      "      --token-file FILE a bearer token for HTTP endpoints (else\n"
      "                        $JRPC_TOKEN); jrpc speaks no HTTP yet\n"
      "      --timeout MS      give up after MS milliseconds (default "
      "30000)\n"
      "  -h, --help            this help\n"
      "  -V, --version         the version\n"
      "\n"
      "Endpoint: -u or -t, else $JRPC_SOCKET (a path), else $JRPC_ADDRESS\n"
      "(HOST:PORT), else " SYSTEM_SOCKET " if it exists, else\n"
      "$XDG_RUNTIME_DIR/jrpcd.sock, else ${TMPDIR:-/tmp}/jrpcd-UID/jrpcd.sock\n"
      "(jrpcd's built-in config). A default socket must be the caller's or\n"
      "root's: another user's is refused.\n"
      "Exit status: 0 result, 1 JSON-RPC error, 2 usage or connection "
      "error,\n"
      "3 timeout.\n",
      f);
}

/* The default endpoint, when neither -u nor -t was given; -1 when the
 * default socket's private directory is not safe (said on stderr). A path
 * from JRPC_SOCKET is the user's choice, like -u; the defaults are checked
 * for who made them on every connect (transport.c). */
static int default_endpoint(jc_endpoint *ep, char *buf, size_t cap) {
  const char *sock = getenv("JRPC_SOCKET"), *addr = getenv("JRPC_ADDRESS");
  struct stat st;
  char note[4400], why[4400];
  if (sock && *sock) {
    ep->unix_path = sock;
    return 0;
  }
  if (addr && *addr) {
    ep->tcp = addr;
    return 0;
  }
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

enum {
  OPT_ID = 256,
  OPT_BATCH,
  OPT_STDIN,
  OPT_COMPACT,
  OPT_RAW,
  OPT_COLOR,
  OPT_NO_COLOR,
  OPT_NO_CHECK,
  OPT_TIMEOUT,
  OPT_CAFILE,
  OPT_CERT,
  OPT_KEY,
  OPT_TOKEN_FILE,
};

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
  static const struct option longs[] = {
      {"unix", required_argument, NULL, 'u'},
      {"tcp", required_argument, NULL, 't'},
      {"framing", required_argument, NULL, 'f'},
      {"list", no_argument, NULL, 'l'},
      {"describe", required_argument, NULL, 'd'},
      {"notify", no_argument, NULL, 'n'},
      {"id", required_argument, NULL, OPT_ID},
      {"batch", required_argument, NULL, OPT_BATCH},
      {"stdin", no_argument, NULL, OPT_STDIN},
      {"compact", no_argument, NULL, OPT_COMPACT},
      {"raw", no_argument, NULL, OPT_RAW},
      {"color", no_argument, NULL, OPT_COLOR},
      {"no-color", no_argument, NULL, OPT_NO_COLOR},
      {"no-check", no_argument, NULL, OPT_NO_CHECK},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"cafile", required_argument, NULL, OPT_CAFILE},
      {"cert", required_argument, NULL, OPT_CERT},
      {"key", required_argument, NULL, OPT_KEY},
      {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0},
  };
  jc_opts o = {.ep = {.framing = JC_NEWLINE, .timeout_ms = 30000},
               .check = true};
  const char *describe = NULL, *batch = NULL, *id_text = NULL;
  bool list = false, passthrough = false;
  int color = -1, c, modes = 0;
  char sockbuf[4200];
  char token[600];
  const char *token_file = NULL;
  /* '+': options end at METHOD, so "-1" after it is an argument. */
  while ((c = getopt_long(argc, argv, "+u:t:f:ld:nhV", longs, NULL)) != -1) {
    switch (c) {
    case 'u':
      o.ep.unix_path = optarg;
      o.ep.tcp = NULL;
      break;
    case 't':
      o.ep.tcp = optarg;
      o.ep.unix_path = NULL;
      break;
    case 'f':
      if (!strcmp(optarg, "newline")) {
        o.ep.framing = JC_NEWLINE;
      } else if (!strcmp(optarg, "length")) {
        o.ep.framing = JC_LENGTH;
      } else {
        jc_warn("-f: \"%s\" is not newline or length", optarg);
        return JC_EXIT_USAGE;
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
    case 'n':
      o.notify = true;
      break;
    case OPT_ID:
      id_text = optarg;
      break;
    case OPT_BATCH:
      batch = optarg;
      modes++;
      break;
    case OPT_STDIN:
      passthrough = true;
      modes++;
      break;
    case OPT_COMPACT:
      o.out.compact = true;
      break;
    case OPT_RAW:
      o.out.raw = true;
      break;
    case OPT_COLOR:
    case OPT_NO_COLOR:
      color = c == OPT_COLOR;
      break;
    case OPT_NO_CHECK:
      o.check = false;
      break;
    case OPT_TIMEOUT:
      if (parse_int(optarg, "--timeout", &o.ep.timeout_ms) < 0)
        return JC_EXIT_USAGE;
      break;
    case OPT_CAFILE:
      o.ep.cafile = optarg;
      break;
    case OPT_CERT:
      o.ep.cert = optarg;
      break;
    case OPT_KEY:
      o.ep.key = optarg;
      break;
    case OPT_TOKEN_FILE:
      token_file = optarg;
      break;
    case 'h':
      usage(stdout);
      return JC_EXIT_OK;
    case 'V':
      printf("jrpc %s\n", JRPC_VERSION);
      return JC_EXIT_OK;
    default:
      usage(stderr);
      return JC_EXIT_USAGE;
    }
  }
  int nargs = argc - optind;
  if (modes > 1 || (modes && nargs)) {
    jc_warn("-l, -d, --batch, --stdin and a METHOD exclude each other");
    return JC_EXIT_USAGE;
  }
  if (!o.ep.unix_path && !o.ep.tcp &&
      default_endpoint(&o.ep, sockbuf, sizeof sockbuf) != 0)
    return JC_EXIT_USAGE;
  if ((o.ep.cert || o.ep.key) && !o.ep.cafile) {
    jc_warn("--cert and --key are for TLS, which --cafile turns on");
    return JC_EXIT_USAGE;
  }
  if (o.ep.cafile && !o.ep.tcp) {
    jc_warn("TLS (--cafile) is for a TCP endpoint (-t HOST:PORT)");
    return JC_EXIT_USAGE;
  }
  if (token_file && read_token(token_file, token, sizeof(token)) < 0)
    return JC_EXIT_USAGE;
  o.ep.token = token_file ? token : getenv("JRPC_TOKEN");
  if (o.ep.token && !*o.ep.token && !token_file)
    o.ep.token = NULL; /* JRPC_TOKEN= set empty: none */
  if (o.ep.token && !token_ok(o.ep.token)) {
    jc_warn("%s: not a bearer token (1 to 512 of A-Z a-z 0-9 - . _ ~ + /, "
            "then = padding)",
            token_file ? "--token-file" : "JRPC_TOKEN");
    return JC_EXIT_USAGE;
  }
  /* Every endpoint jrpc reaches today is newline or length framed: the
   * token is for HTTP ones (issue 25). Said when it was asked for. */
  if (token_file)
    jc_warn("--token-file: the token goes to HTTP endpoints only, and this "
            "one is %s framed: not sent",
            o.ep.framing == JC_LENGTH ? "length" : "newline");
  jc_output_init(&o.out, color);
  o.id = id_text ? jc_word_value(id_text) : json_integer(1);
  if (!json_is_string(o.id) && !json_is_number(o.id) && !json_is_null(o.id)) {
    json_decref(o.id);
    jc_warn("--id: \"%s\" is not a string, number or null", id_text);
    return JC_EXIT_USAGE;
  }
  int rc;
  if (list || describe) {
    rc = jc_discovery(&o, describe);
  } else if (batch) {
    rc = jc_batch(&o, batch);
  } else if (passthrough) {
    rc = jc_passthrough(&o);
  } else if (nargs > 0) {
    rc = jc_command(&o, NULL, nargs, argv + optind);
  } else if (isatty(STDIN_FILENO)) {
    rc = jc_interactive(&o);
  } else {
    jc_warn("no METHOD (and stdin is not a terminal for the prompt)");
    usage(stderr);
    rc = JC_EXIT_USAGE;
  }
  json_decref(o.id);
  return rc;
}
