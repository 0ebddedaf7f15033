/* jrpc_bench_opts.c - see jrpc_bench_opts.h. */
#include "jrpc_bench_opts.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: jrpc-bench (-u PATH | -t HOST:PORT) [options]\n"
    "  -u, --unix PATH          connect to a Unix socket\n"
    "  -t, --tcp HOST:PORT      connect over TCP (IPv6: [ADDR]:PORT)\n"
    "  -f, --framing newline|length|http|websocket   (default newline;\n"
    "                           length = 4-byte big-endian prefix; http =\n"
    "                           HTTP/1.1 POST, keep-alive, the window\n"
    "                           pipelined; websocket = the upgrade on\n"
    "                           GET /, then a masked text frame each)\n"
    "      --http               the same as -f http\n"
    "      --http-path PATH     the path POSTed to (default /)\n"
    "  -c, --connections N      connections (default 1)\n"
    "  -w, --window W           requests in flight per connection (default 1)\n"
    "  -d, --duration SECONDS   measure for this long\n"
    "  -n, --requests N         measure this many requests; with -d the\n"
    "                           first limit reached ends the run; neither: -d "
    "5\n"
    "      --warmup SECONDS     send for this long before measuring (default "
    "0)\n"
    "  -W, --workload small|named|notify|batch:N|large:K   (default small)\n"
    "  -m, --method NAME        method of the built-in workloads (default\n"
    "                           math.add; echo for large:K)\n"
    "  -T, --template JSON      request with {id} where the id goes\n"
    "      --template-file F    the same, read from a file\n"
    "  -p, --pid PID            report the CPU time PID used while measuring\n"
    "  -q, --quiet              no progress line each second on stderr\n"
    "      --reconnect K        reconnect after every K replies; a close by\n"
    "                           the server after a complete reply is a\n"
    "                           reconnect too\n"
    "      --allow-lost         a close by the server with requests in\n"
    "                           flight: count them as lost, not as errors,\n"
    "                           and reconnect (a reply cut short is still\n"
    "                           an error)\n"
    "      --max-frame BYTES    largest reply frame (default 16777216)\n"
    "      --allow-errors       error replies do not make the exit status 1\n"
    "      --timeout SECONDS    longest wait for a reply before giving up\n"
    "                           (default 10)\n"
    "  -h, --help               this text\n"
    "Exit status: 0 all replies matched, 1 errors, 2 bad options or no "
    "connection.\n";

enum {
  OPT_WARMUP = 256,
  OPT_TEMPLATE_FILE,
  OPT_RECONNECT,
  OPT_MAX_FRAME,
  OPT_ALLOW_ERRORS,
  OPT_TIMEOUT,
  OPT_HTTP,
  OPT_HTTP_PATH,
  OPT_ALLOW_LOST
};

static const struct option long_opts[] = {
    {"unix", required_argument, NULL, 'u'},
    {"tcp", required_argument, NULL, 't'},
    {"framing", required_argument, NULL, 'f'},
    {"connections", required_argument, NULL, 'c'},
    {"window", required_argument, NULL, 'w'},
    {"duration", required_argument, NULL, 'd'},
    {"requests", required_argument, NULL, 'n'},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"workload", required_argument, NULL, 'W'},
    {"method", required_argument, NULL, 'm'},
    {"template", required_argument, NULL, 'T'},
    {"template-file", required_argument, NULL, OPT_TEMPLATE_FILE},
    {"pid", required_argument, NULL, 'p'},
    {"quiet", no_argument, NULL, 'q'},
    {"reconnect", required_argument, NULL, OPT_RECONNECT},
    {"max-frame", required_argument, NULL, OPT_MAX_FRAME},
    {"allow-errors", no_argument, NULL, OPT_ALLOW_ERRORS},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"http", no_argument, NULL, OPT_HTTP},
    {"http-path", required_argument, NULL, OPT_HTTP_PATH},
    {"allow-lost", no_argument, NULL, OPT_ALLOW_LOST},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

static int bad(const char *fmt, const char *what) {
  fprintf(stderr, "jrpc-bench: ");
  fprintf(stderr, fmt, what);
  fprintf(stderr, "\n%s", usage_text);
  return 2;
}

/* A whole decimal number in [lo, hi]. */
static int read_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  char *end;
  if (*s < '0' || *s > '9')
    return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* Seconds: a finite number in [lo, 1e6]. */
static int read_seconds(const char *s, double lo, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo) || v > 1e6)
    return -1;
  *out = v;
  return 0;
}

static int read_workload(bench_opts_t *o, const char *s) {
  if (strcmp(s, "small") == 0)
    o->workload = WL_SMALL;
  else if (strcmp(s, "named") == 0)
    o->workload = WL_NAMED;
  else if (strcmp(s, "notify") == 0)
    o->workload = WL_NOTIFY;
  else if (strncmp(s, "batch:", 6) == 0) {
    o->workload = WL_BATCH;
    return read_u64(s + 6, 1, 1000000, &o->wl_arg);
  } else if (strncmp(s, "large:", 6) == 0) {
    o->workload = WL_LARGE;
    return read_u64(s + 6, 0, (uint64_t)1 << 30, &o->wl_arg);
  } else
    return -1;
  return 0;
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  while (buf) {
    len += fread(buf + len, 1, cap - len - 1, f);
    if (ferror(f) || len < cap - 1)
      break;
    char *bigger = realloc(buf, cap * 2);
    if (!bigger) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = bigger;
    cap *= 2;
  }
  if (buf && ferror(f)) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf)
    buf[len] = '\0';
  return buf;
}

static int set_template(bench_opts_t *o, char *text) {
  if (o->template_text) {
    free(text);
    return -1;
  }
  o->template_text = text;
  o->workload = WL_TEMPLATE;
  return 0;
}

int bench_opts_parse(bench_opts_t *o, int argc, char **argv) {
  memset(o, 0, sizeof(*o));
  o->connections = 1;
  o->window = 1;
  o->max_frame = (size_t)16 << 20;
  o->timeout = 10;
  o->http_path = "/";
  int workload_given = 0;
  uint64_t v;
  int ch;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, ":u:t:f:c:w:d:n:W:m:T:p:qh", long_opts,
                           NULL)) != -1) {
    switch (ch) {
    case 'u':
      o->unix_path = optarg;
      break;
    case 't':
      o->tcp = optarg;
      break;
    case 'f':
      if (strcmp(optarg, "newline") == 0)
        o->framing = FRAMING_NEWLINE;
      else if (strcmp(optarg, "length") == 0)
        o->framing = FRAMING_LENGTH;
      else if (strcmp(optarg, "http") == 0)
        o->framing = FRAMING_HTTP;
      else if (strcmp(optarg, "websocket") == 0)
        o->framing = FRAMING_WEBSOCKET;
      else
        return bad("-f: expected newline, length, http or websocket, got "
                   "\"%s\"",
                   optarg);
      break;
    case OPT_HTTP:
      o->framing = FRAMING_HTTP;
      break;
    case OPT_HTTP_PATH:
      if (optarg[0] != '/' || strpbrk(optarg, " \t\r\n"))
        return bad("--http-path: expected a path starting with / and no "
                   "blanks, got \"%s\"",
                   optarg);
      o->http_path = optarg;
      break;
    case OPT_ALLOW_LOST:
      o->allow_lost = 1;
      break;
    case 'c':
      if (read_u64(optarg, 1, 100000, &v))
        return bad("-c: expected 1 to 100000 connections, got \"%s\"", optarg);
      o->connections = (unsigned)v;
      break;
    case 'w':
      if (read_u64(optarg, 1, 1000000, &v))
        return bad("-w: expected a window of 1 to 1000000, got \"%s\"", optarg);
      o->window = (unsigned)v;
      break;
    case 'd':
      if (read_seconds(optarg, 0, &o->duration) || o->duration <= 0)
        return bad("-d: expected seconds above 0, got \"%s\"", optarg);
      break;
    case 'n':
      if (read_u64(optarg, 1, UINT64_MAX / 2, &o->requests))
        return bad("-n: expected a number of requests, got \"%s\"", optarg);
      break;
    case OPT_WARMUP:
      if (read_seconds(optarg, 0, &o->warmup))
        return bad("--warmup: expected seconds, got \"%s\"", optarg);
      break;
    case 'W':
      if (read_workload(o, optarg))
        return bad("-W: expected small, named, notify, batch:N (N from 1 to "
                   "1000000) or large:K, got \"%s\"",
                   optarg);
      workload_given = 1;
      break;
    case 'm':
      if (!*optarg || strpbrk(optarg, "\"\\\n"))
        return bad("-m: \"%s\" is not a plain method name", optarg);
      o->method = optarg;
      break;
    case 'T': {
      char *t = strdup(optarg);
      if (!t || set_template(o, t))
        return bad("%s", "-T and --template-file: give one template");
      break;
    }
    case OPT_TEMPLATE_FILE: {
      char *t = read_file(optarg);
      if (!t) {
        fprintf(stderr, "jrpc-bench: --template-file %s: %s\n", optarg,
                strerror(errno));
        return 2;
      }
      if (set_template(o, t))
        return bad("%s", "-T and --template-file: give one template");
      break;
    }
    case 'p':
      if (read_u64(optarg, 1, 0x7fffffff, &v))
        return bad("-p: expected a process id, got \"%s\"", optarg);
      o->pid = (long)v;
      break;
    case 'q':
      o->quiet = 1;
      break;
    case OPT_RECONNECT:
      if (read_u64(optarg, 1, UINT64_MAX / 2, &o->reconnect))
        return bad("--reconnect: expected a number of replies, got \"%s\"",
                   optarg);
      break;
    case OPT_MAX_FRAME:
      if (read_u64(optarg, 64, (uint64_t)1 << 31, &v))
        return bad("--max-frame: expected 64 to 2147483648 bytes, got \"%s\"",
                   optarg);
      o->max_frame = (size_t)v;
      break;
    case OPT_ALLOW_ERRORS:
      o->allow_errors = 1;
      break;
    case OPT_TIMEOUT:
      if (read_seconds(optarg, 0, &o->timeout) || o->timeout <= 0)
        return bad("--timeout: expected seconds above 0, got \"%s\"", optarg);
      break;
    case 'h':
      fputs(usage_text, stdout);
      return -1;
    case ':':
      return bad("%s needs a value", argv[optind - 1]);
    default:
      return bad("unknown option %s", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return bad("unexpected argument \"%s\"", argv[optind]);
  if (!o->unix_path == !o->tcp)
    return bad("%s", "give one of -u PATH or -t HOST:PORT");
  if (o->template_text && (workload_given || o->method))
    return bad("%s", "a template replaces -W and -m: give one or the other");
  if (!o->duration && !o->requests)
    o->duration = 5;
  return 0;
}

void bench_opts_free(bench_opts_t *o) {
  free(o->template_text);
  o->template_text = NULL;
}
