/* main.c - jrpcd's command line. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "activation.h"
#include "cluster.h"
#include "config_keys.h"
#include "config_print.h"
#include "default_socket.h"
#include "gen_tls.h"
#include "install_dirs.h"
#include "log.h"
#include "parser.h"
#include "privs.h"
#include "sdnotify.h"
#include "strspan.h"
#include "server.h"
#include "tokens.h"

#ifndef JRPCD_VERSION
#define JRPCD_VERSION "0.0.0"
#endif

static void usage(FILE *f) {
  fprintf(f,
          "usage: jrpcd [-c FILE] [-t] [-T] [-v]... [-q] [-V|--version] "
          "[-h|--help]\n"
          "       jrpcd --list-keys\n"
          "       jrpcd --hash-token NAME\n"
          "  -c FILE  serve with this config (see jrpcd.conf); without it,\n"
          "           a built-in one: a Unix socket in $XDG_RUNTIME_DIR (or\n"
          "           the private ${TMPDIR:-/tmp}/jrpcd-UID), TCP on\n"
          "           127.0.0.1:7400, the sample plugins\n"
          "  -t       check the config and its plugins, print what would be\n"
          "           served, and exit (0 when all is well, 1 if not)\n"
          "  -T       as -t, then print every setting in effect on stdout, as\n"
          "           a config file that marks the defaults (-c reads it);\n"
          "           what -t says goes to stderr then\n"
          "  -v       log one level more than the config's log_level;\n"
          "           repeat for more (-vv), up to debug\n"
          "  -q       log errors only\n"
          "  -V, --version  print the version and exit\n"
          "  -h, --help  this help\n"
          "  --list-keys  print every config key: section, key, listener\n"
          "           kinds, values, default, description (tab-separated)\n"
          "  --hash-token NAME  make a random bearer token: the token on\n"
          "           stderr, its tokens_file line on stdout\n"
          "Runs in the foreground and logs to stderr (in the journal's format\n"
          "when $JOURNAL_STREAM names stderr). SIGTERM/SIGINT stop it\n"
          "gracefully; SIGHUP reloads the config's plugins. Under systemd it\n"
          "reports its state on $NOTIFY_SOCKET and serves each socket passed\n"
          "in LISTEN_FDS for the [listen NAME] section its\n"
          "FileDescriptorName= names.\n");
}

/* The sample plugins next to this binary in a build tree, else the
 * installed ones (install_dirs.h: this installation's, wherever it was
 * installed to). */
static void default_plugin_dir(char *out, size_t n) {
  char exe[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (k > 0) {
    exe[k] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      char probe[PATH_MAX + 32];
      snprintf(probe, sizeof(probe), "%s/../handlers/math.so", exe);
      if (access(probe, R_OK) == 0 && strlen(exe) + 13 <= n) {
        memcpy(out, exe, strlen(exe));
        memcpy(out + strlen(exe), "/../handlers", 13);
        return;
      }
    }
  }
  snprintf(out, n, "%s", jrpcd_plugin_dir_default);
}

/* The built-in config, its socket at the default path that jrpc also
 * uses (common/default_socket.h), whose private directory is made here.
 * NULL with err set when that directory is not safe to use. */
static char *builtin_config(char *err, size_t errlen) {
  char dir[PATH_MAX], sock[4200], note[4400];
  default_plugin_dir(dir, sizeof(dir));
  if (jrpc_default_socket(sock, sizeof sock, 1, note, sizeof note, err,
                          errlen) != 0)
    return NULL;
  if (note[0])
    jrpcd_log_bare(JRPC_LOG_WARN, "%s", note);
  size_t n = 2 * PATH_MAX + 8192;
  char *text = malloc(n);
  if (!text) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  snprintf(text, n,
           "[server]\n"
           "plugin_dir = %s\n"
           "[listen local]\n"
           "unix = %s\n"
           "mode = 0600\n"
           "[listen tcp]\n"
           "tcp = 127.0.0.1:7400\n"
           "[plugin math]\n"
           "path = math.so\n"
           "[plugin echo]\n"
           "path = echo.so\n"
           "[plugin sleep]\n"
           "path = sleep.so\n",
           dir, sock);
  return text;
}

/* -t under socket activation: the passed sockets are checked as a start
 * would check them (a name with no section, a unix socket for a tcp
 * section) and listed; nothing is bound, served or removed. */
static int check_passed(jrpcd_config_t *c, jrpcd_activation_t *act, FILE *out) {
  char err[1024];
  if (jrpcd_activation_check(act, c, err, sizeof(err))) {
    jrpcd_log_bare(JRPC_LOG_ERROR, "%s", err);
    return 1;
  }
  for (size_t i = 0; i < c->nlistens; i++) {
    const jrpcd_listen_conf_t *lc = &c->listens[i];
    jrpcd_passed_t *p = jrpcd_activation_find(act, lc->name);
    jrpcd_listener_t l;
    if (!p)
      continue;
    if (jrpcd_listener_adopt(&l, lc, p->fd, err, sizeof(err))) {
      jrpcd_log_bare(JRPC_LOG_ERROR, "%s", err);
      return 1;
    }
    p->taken = 1;
    fprintf(out,
            "listen %s: %s passed by the service manager as fd %d, %s "
            "framing\n",
            l.name, l.desc, l.fd, jrpc__framing_name(l.framing));
    jrpcd_listener_close(&l);
  }
  return 0;
}

/* Whether the user jrpcd serves as (user, group) may create and remove
 * entries in DIR: asked of the kernel by a child that becomes that user,
 * so that groups and ACLs count as they will. 1 yes, 0 no, -1 unknown
 * (why says). Runs before any plugin has started a thread. */
static int serving_user_writes(const char *dir, const char *user,
                               const char *group, char *why, size_t whylen) {
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, whylen, "fork: %s", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    char err[256];
    if (jrpcd_drop_privileges(user, group, err, sizeof err) != 0)
      _exit(2);
    _exit(access(dir, W_OK | X_OK) == 0 ? 0 : 1);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      snprintf(why, whylen, "waitpid: %s", strerror(errno));
      return -1;
    }
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 2) {
    snprintf(why, whylen, "cannot become the serving user to ask");
    return -1;
  }
  return WEXITSTATUS(status) == 0;
}

/* -t: each Unix socket's directory must be there and writable, by the
 * user who binds it (jrpcd as started) and by the one who removes it at
 * the stop (the serving user, after a root start with user or group);
 * else the start would fail at the bind, or leave the socket behind.
 * Passed sockets are the service manager's. 0, or -1 logged. */
static int check_socket_dirs(const jrpcd_config_t *c, jrpcd_activation_t *act) {
  for (size_t i = 0; i < c->nlistens; i++) {
    const jrpcd_listen_conf_t *l = &c->listens[i];
    if (l->kind != JRPCD_LISTEN_UNIX || jrpcd_activation_find(act, l->name))
      continue;
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
    const char *slash = strrchr(l->path, '/');
    if (!slash)
      snprintf(dir, sizeof dir, ".");
    else
      snprintf(dir, sizeof dir, "%.*s",
               slash == l->path ? 1 : (int)(slash - l->path), l->path);
    char why[768] = "";
    struct stat st;
    if (stat(dir, &st) != 0)
      snprintf(why, sizeof why,
               "its directory %s: %s (make it first, e.g. systemd's "
               "RuntimeDirectory=)",
               dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
      snprintf(why, sizeof why, "%s is not a directory", dir);
    else if (access(dir, W_OK | X_OK) != 0)
      snprintf(why, sizeof why,
               "its directory %s is not writable by uid %u, who binds the "
               "socket: %s",
               dir, (unsigned)geteuid(), strerror(errno));
    else if ((c->user || c->group) && geteuid() == 0) {
      char ask[256];
      int w = serving_user_writes(dir, c->user, c->group, ask, sizeof ask);
      if (w == 0)
        snprintf(why, sizeof why,
                 "its directory %s is not writable by %s%s%s, whom jrpcd "
                 "serves as after the bind: the socket could not be removed "
                 "at the stop",
                 dir, c->user ? c->user : "", c->user && c->group ? ":" : "",
                 c->group ? c->group : "");
      else if (w < 0)
        snprintf(why, sizeof why, "its directory %s: %s", dir, ask);
    }
    if (why[0]) {
      jrpcd_log_bare(JRPC_LOG_ERROR, "%s:%d: [listen %s] unix: %s", c->file,
                     jrpcd_listen_key_line(l, "unix"), l->name, why);
      return -1;
    }
  }
  return 0;
}

static int check_only(jrpcd_config_t *c, jrpcd_activation_t *act, int dump) {
  /* -T's stdout is the config alone, so that it can be saved and served
   * (-c); what -t says goes to stderr then. */
  FILE *out = dump ? stderr : stdout;
  jrpcd_gen_t *g;
  char err[1024];
  int strict = c->strict_plugins;
  c->strict_plugins = 0; /* report every plugin, not just the first */
  if (act->n && check_passed(c, act, out))
    return 1;
  if (check_socket_dirs(c, act) != 0)
    return 1;
  if (jrpcd_gen_load(&g, c, 1, err, sizeof(err))) {
    jrpcd_log_bare(JRPC_LOG_ERROR, "%s", err);
    return 1;
  }
  if (jrpcd_gen_tls_load(g, c, NULL, err, sizeof(err))) {
    jrpcd_log_bare(JRPC_LOG_ERROR, "%s", err);
    jrpcd_gen_release(g);
    return 1;
  }
  fprintf(out, "config %s: %u workers, thread pool %u, parser %s", c->file,
          c->workers, c->thread_pool, c->parser);
  jrpc__parser_t *p = strcmp(c->parser, "auto") != 0
                          ? jrpc__parser_new(c->parser)
                      : c->parser_auto_threshold == JRPCD_AUTO_MEASURED
                          ? jrpc__parser_auto_new(JRPC__AUTO_MEASURED)
                          : jrpc__parser_auto_new(c->parser_auto_threshold);
  if (!p) {
    fprintf(out, "\n");
    jrpcd_log_bare(JRPC_LOG_ERROR,
                   "%s: [server] parser: \"%s\" is not available in this "
                   "build",
                   c->file, c->parser);
    jrpcd_gen_release(g);
    return 1;
  }
  /* What auto chose and on what evidence, and the string-scanning kernel
   * native uses, in one parenthesis. */
  size_t th = jrpc__parser_auto_threshold(p);
  if (!strcmp(c->parser, "auto") && th == 0)
    fprintf(out, " (simdjson with its %s kernel for every frame: %s; ",
            jrpc__simdjson_kernel(), jrpc__parser_auto_why(p));
  else if (!strcmp(c->parser, "auto") && th != SIZE_MAX)
    fprintf(out,
            " (native below %zu bytes, simdjson with its %s kernel from "
            "there: %s; ",
            th, jrpc__simdjson_kernel(), jrpc__parser_auto_why(p));
  else if (!strcmp(c->parser, "auto"))
    fprintf(out, " (native for every frame: %s; simdjson kernel: %s; ",
            jrpc__parser_auto_why(p), jrpc__simdjson_kernel());
  else
    fprintf(out, " (");
  fprintf(out, "string scanning: %s)", jrpc__strspan_kernel());
  fprintf(out, "\n");
  jrpc__parser_destroy(p);
  for (size_t i = 0; i < c->nlistens; i++) {
    const jrpcd_listen_conf_t *l = &c->listens[i];
    if (jrpcd_activation_find(act, l->name))
      continue; /* listed by check_passed */
    if (l->kind == JRPCD_LISTEN_UNIX)
      fprintf(out, "listen %s: unix:%s mode %04o, %s framing\n", l->name,
              l->path, l->mode, jrpc__framing_name(l->framing));
    else {
      char tls[128];
      jrpcd_gen_tls_describe(g, l->name, tls, sizeof(tls));
      fprintf(out, "listen %s: tcp:%s%s%s:%u, %s framing%s\n", l->name,
              strchr(l->host, ':') ? "[" : "", l->host,
              strchr(l->host, ':') ? "]" : "", l->port,
              jrpc__framing_name(l->framing), tls);
    }
  }
  /* A [cluster] whose NATS client does not load, or whose files do not
   * read, would fail the start: say so here. */
  if (c->has_cluster && jrpcd_cluster_check(c, err, sizeof(err))) {
    jrpcd_log_bare(JRPC_LOG_ERROR, "%s", err);
    jrpcd_gen_release(g);
    return 1;
  }
  jrpcd_gen_describe(g, out);
  int bad = g->failed > 0;
  if (bad)
    fprintf(out, "%zu plugin%s failed to load (%s with strict_plugins = %s)\n",
            g->failed, g->failed == 1 ? "" : "s", strict ? "fatal" : "skipped",
            strict ? "yes" : "no");
  jrpcd_gen_release(g);
  if (dump) {
    c->strict_plugins = strict; /* as the file has it */
    jrpcd_config_print(c, stdout);
  }
  return bad;
}

/* --hash-token NAME: the token goes to stderr (the terminal), the line for
 * tokens_file to stdout, so that `jrpcd --hash-token app >> FILE` stores
 * only its hash. */
static int hash_token(const char *name) {
  char tok[64], line[JRPCD_TOKEN_NAME_MAX + 128], err[256];
  if (jrpcd_token_new(name, tok, sizeof(tok), line, sizeof(line), err,
                      sizeof(err)) != 0) {
    fprintf(stderr, "jrpcd: --hash-token: %s\n", err);
    return 1;
  }
  fprintf(stderr, "%s\n", tok);
  printf("%s\n", line);
  explicit_bzero(tok, sizeof(tok));
  return fflush(stdout) == 0 && fflush(stderr) == 0 ? 0 : 1;
}

/* Every connection is a file descriptor, and the usual soft limit (1024)
 * is far below what one worker can serve; the hard limit is ours to take.
 * Says so when even that is below max_connections. */
static void raise_fd_limit(const jrpcd_config_t *c) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
    return;
  if (rl.rlim_cur < rl.rlim_max) {
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
      jrpcd_warn("cannot raise the open-file limit from %llu to %llu: %s",
                 (unsigned long long)was, (unsigned long long)rl.rlim_max,
                 strerror(errno));
      rl.rlim_cur = was;
    } else {
      jrpcd_debug("open-file limit raised from %llu to %llu",
                  (unsigned long long)was, (unsigned long long)rl.rlim_cur);
    }
  }
  /* Listeners, the loops' own descriptors and plugins need some too. */
  if (rl.rlim_cur != RLIM_INFINITY &&
      (uint64_t)rl.rlim_cur < (uint64_t)c->max_connections + 64)
    jrpcd_warn("open-file limit %llu is below max_connections %u (+64): "
               "connections past it will be refused by the kernel",
               (unsigned long long)rl.rlim_cur, c->max_connections);
}

int main(int argc, char **argv) {
  const char *file = NULL;
  int test = 0, dump = 0, verbose = 0, quiet = 0, opt;
  enum { LIST_KEYS = 256, HASH_TOKEN };
  static const struct option long_options[] = {
      {"list-keys", no_argument, NULL, LIST_KEYS},
      {"hash-token", required_argument, NULL, HASH_TOKEN},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0},
  };
  /* Before any config is read, -T and --list-keys included: the default
   * plugin_dir is this installation's. */
  jrpcd_install_dirs_init();
  while ((opt = getopt_long(argc, argv, "c:tTvqVh", long_options, NULL)) !=
         -1) {
    switch (opt) {
    case 'c':
      file = optarg;
      break;
    case 't':
      test = 1;
      break;
    case 'T':
      test = dump = 1;
      break;
    case LIST_KEYS:
      jrpcd_keys_print(stdout);
      return 0;
    case HASH_TOKEN:
      return hash_token(optarg);
    case 'v':
      verbose++;
      break;
    case 'q':
      quiet = 1;
      break;
    case 'V':
      printf("jrpcd %s (handler ABI %u.%u)\n", JRPCD_VERSION, JRPC_ABI_MAJOR,
             JRPC_ABI_MINOR);
      printf("TLS: %s\n", jrpcd_tls_library()
                              ? jrpcd_tls_library()
                              : "no (built with -DJRPC_TLS=OFF)");
      return 0;
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "jrpcd: unexpected argument \"%s\"\n", argv[optind]);
    usage(stderr);
    return 2;
  }
  if (quiet && verbose) {
    fprintf(stderr, "jrpcd: -q and -v contradict each other\n");
    usage(stderr);
    return 2;
  }

  jrpcd_log_init();
  jrpcd_log_set_verbosity(quiet ? -JRPC_LOG_DEBUG : verbose);
  /* Before anything can start a process (a plugin's init may): these
   * variables are for jrpcd alone, and both calls remove them. */
  char err[1024];
  jrpcd_activation_t act;
  if (jrpcd_activation_take(&act, err, sizeof(err))) {
    jrpcd_log_bare(JRPC_LOG_ERROR, "%s", err);
    return 1;
  }
  int rc = jrpcd_notify_open();
  if (rc && !test)
    jrpcd_log_bare(JRPC_LOG_WARN,
                   "NOTIFY_SOCKET: %s; the service manager will not hear "
                   "from jrpcd",
                   strerror(-rc));

  jrpcd_config_t conf;
  char *text = NULL;
  if (file) {
    rc = jrpcd_config_load(&conf, file, err, sizeof(err));
  } else {
    text = builtin_config(err, sizeof(err));
    rc = text ? jrpcd_config_load_string(&conf, text, "(built-in config)", err,
                                         sizeof(err))
              : -1;
  }
  if (rc) {
    jrpcd_log_bare(JRPC_LOG_ERROR, "%s%s",
                   text || file ? "" : "built-in config: ", err);
    jrpcd_activation_free(&act);
    jrpcd_notify_close();
    free(text);
    return 1;
  }
  jrpcd_log_set_level(conf.log_level);
  for (size_t j = 0; j < conf.access.n; j++) {
    char why[1024];
    if (jrpcd_access_shadowed(&conf.access, j, why, sizeof(why)))
      jrpcd_log_bare(JRPC_LOG_WARN, "%s:%d: %s", conf.file,
                     conf.access.rules[j].line, why);
  }
  if (test) {
    rc = check_only(&conf, &act, dump);
    jrpcd_activation_free(&act);
    jrpcd_notify_close();
    jrpcd_config_free(&conf);
    free(text);
    return rc;
  }

  signal(SIGPIPE, SIG_IGN); /* a vanished peer is an error code, not death */
  raise_fd_limit(&conf);
  jrpcd_server_t srv;
  rc = jrpcd_server_start(&srv, &conf, text, &act, err, sizeof(err));
  /* Every passed socket now belongs to a listener, or the start failed:
   * either way none is left to hold. */
  jrpcd_activation_free(&act);
  if (rc) {
    jrpcd_error("%s", err);
    jrpcd_server_free(&srv);
    jrpcd_notify_close();
    free(text);
    return 1;
  }
  rc = jrpcd_server_run(&srv);
  jrpcd_server_free(&srv);
  jrpcd_notify_close();
  free(text);
  return rc;
}
