/* config_keys.c - the table of jrpcd.conf's keys, and the value parsers
 * and printers its types use. See config_keys.h; the reading of the file
 * (sections, lines, messages with file and line) is config.c's. */
#include "config_keys.h"

#include "access.h"
#include "nearest.h"
#include "install_dirs.h"
#include "privs.h"
#include "sockdir.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "http.h"
#include "jrpc/jrpc.h"

#define UNIX_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/* ------------------------------------------------------------------ */
/* The table                                                           */
/* ------------------------------------------------------------------ */

static const jrpcd_key_word_t parsers[] = {
    {"native", 0}, {"jsmn", 0}, {"simdjson", 0}, {"auto", 0}, {NULL, 0}};

static const jrpcd_key_word_t log_levels[] = {
    {"error", JRPC_LOG_ERROR},
    {"warn", JRPC_LOG_WARN},
    {"info", JRPC_LOG_INFO},
    {"debug", JRPC_LOG_DEBUG},
    {NULL, 0},
};

static const jrpcd_key_word_t access_log_formats[] = {
    {"text", JRPCD_ALOG_TEXT}, {"json", JRPCD_ALOG_JSON}, {NULL, 0}};

static const jrpcd_key_word_t auto_threshold_words[] = {
    {"measured", JRPCD_AUTO_MEASURED}, {NULL, 0}};

static const jrpcd_key_word_t framings[] = {
    {"newline", JRPC_FRAMING_NEWLINE},
    {"length", JRPC_FRAMING_LENGTH},
    {"http", JRPC_FRAMING_HTTP},
    {"content-length", JRPC_FRAMING_CONTENT_LENGTH},
    {NULL, 0},
};

/* The path fits a sockaddr_un, and so does the temporary name it is bound
 * under first; and its directory keeps others from replacing it. */
static int unix_path_usable(const char *value, char *why, size_t whylen) {
  size_t n = strlen(value);
  const char *slash = strrchr(value, '/');
  size_t temp = (slash ? (size_t)(slash - value) + 1 : 0) +
                sizeof(JRPCD_SOCKET_TEMP_DIR "/" JRPCD_SOCKET_TEMP_NAME) - 1;
  if (n > UNIX_PATH_MAX) {
    snprintf(why, whylen,
             "\"%s\" is %zu bytes long (a unix socket path holds at most %zu)",
             value, n, UNIX_PATH_MAX);
    return -1;
  }
  if (temp > UNIX_PATH_MAX) {
    snprintf(why, whylen,
             "\"%s\": its directory is too long for the temporary name the "
             "socket is made under (%zu bytes with " JRPCD_SOCKET_TEMP_DIR
             "/" JRPCD_SOCKET_TEMP_NAME "; at most %zu)",
             value, temp, UNIX_PATH_MAX);
    return -1;
  }
  return jrpcd_socket_dir_safe(value, why, whylen);
}

/* access_log: the file, or the directory it would be made in, is
 * writable, so that -t finds what the start would fail on. */
static int access_log_usable(const char *value, char *why, size_t whylen) {
  struct stat st;
  if (stat(value, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      snprintf(why, whylen, "\"%s\" is a directory", value);
      return -1;
    }
    if (access(value, W_OK) != 0) {
      snprintf(why, whylen, "\"%s\" is not writable: %s", value,
               strerror(errno));
      return -1;
    }
    return 0;
  }
  char *copy = strdup(value);
  if (!copy) {
    snprintf(why, whylen, "out of memory");
    return -1;
  }
  const char *dir = dirname(copy);
  int rc = access(dir, W_OK | X_OK);
  if (rc != 0)
    snprintf(why, whylen, "\"%s\" cannot be made: its directory %s: %s", value,
             dir, strerror(errno));
  free(copy);
  return rc ? -1 : 0;
}

/* One word of `origins`: an origin as browsers send it (RFC 6454),
 * scheme://host[:port], nothing after. "null" (file:// pages, sandboxed
 * frames, redirects) is refused: any site can send it from a sandboxed
 * frame, so allowing it would allow every site. */
static int origin_parses(const char *value, char *why, size_t whylen) {
  size_t n = strlen(value);
  const char *host = strncmp(value, "http://", 7) == 0    ? value + 7
                     : strncmp(value, "https://", 8) == 0 ? value + 8
                                                          : NULL;
  if (strcmp(value, "null") == 0) {
    snprintf(why, whylen,
             "\"null\" cannot be allowed: any site sends it from a "
             "sandboxed frame (serve the page over http(s) instead)");
    return -1;
  }
  if (!host || !*host || strpbrk(host, "/?#*") || n > JRPC__HTTP_ORIGIN_MAX) {
    snprintf(why, whylen,
             "\"%s\" is not an origin: scheme://host[:port] (http or https, "
             "no path, at most %d bytes)",
             value, JRPC__HTTP_ORIGIN_MAX);
    return -1;
  }
  return 0;
}

/* One word of `peers`: a principal (access.h), names resolved now. */
static int principal_parses(const char *value, char *why, size_t whylen) {
  jrpcd_principal_t p;
  if (jrpcd_principal_parse(value, 0, &p, why, whylen) != 0)
    return -1;
  jrpcd_principal_free(&p);
  return 0;
}

/* One word of [cluster] nats: a NATS server's URL as the C client takes
 * it (nats:// or tls://, then [user[:password]@]host[:port]). */
static int nats_url_parses(const char *value, char *why, size_t whylen) {
  const char *rest = strncmp(value, "nats://", 7) == 0  ? value + 7
                     : strncmp(value, "tls://", 6) == 0 ? value + 6
                                                        : NULL;
  if (!rest || !*rest || strchr(rest, ',') || strchr(rest, '/')) {
    snprintf(why, whylen,
             "\"%s\" is not a NATS server URL (nats://HOST:PORT or "
             "tls://HOST:PORT)",
             value);
    return -1;
  }
  return 0;
}

/* [cluster] subject_prefix: NATS subject tokens ([A-Za-z0-9_-]) joined by
 * dots, so that the subjects jrpcd makes under it name no wildcard. */
static int subject_prefix_parses(const char *value, char *why, size_t whylen) {
  int token = 0;
  for (const char *s = value;; s++) {
    if (*s == '.' || *s == '\0') {
      if (!token)
        break;
      if (*s == '\0')
        return 0;
      token = 0;
    } else if (isalnum((unsigned char)*s) || *s == '_' || *s == '-') {
      token++;
    } else {
      break;
    }
  }
  snprintf(why, whylen,
           "\"%s\" is not a subject prefix (tokens of A-Z a-z 0-9 _ - "
           "joined by dots)",
           value);
  return -1;
}

#define FIELD(type, m)                                                         \
  .offset = offsetof(type, m), .size = sizeof(((type *)0)->m)
#define SERVER(m) .section = JRPCD_SEC_SERVER, FIELD(jrpcd_config_t, m)
#define LISTEN(m) .section = JRPCD_SEC_LISTEN, FIELD(jrpcd_listen_conf_t, m)
#define PLUGIN(m) .section = JRPCD_SEC_PLUGIN, FIELD(jrpcd_plugin_conf_t, m)
#define CLUSTER(m) .section = JRPCD_SEC_CLUSTER, FIELD(jrpcd_config_t, m)
#define UINT(lo, hi) .type = JRPCD_KEY_UINT, .min = (lo), .max = (hi)
#define UNIX_ONLY .kinds = JRPCD_KIND_BIT(JRPCD_LISTEN_UNIX)
#define TCP_ONLY .kinds = JRPCD_KIND_BIT(JRPCD_LISTEN_TCP)

static const jrpcd_key_word_t plugin_timeout_words[] = {
    {"server", JRPCD_TIMEOUT_SERVER}, {NULL, 0}};
/* A [plugin NAME] yes/no left unset unless given (the server's then). */
static const jrpcd_key_word_t tri_words[] = {
    {"yes", JRPCD_TRI_YES},  {"no", JRPCD_TRI_NO},  {"true", JRPCD_TRI_YES},
    {"false", JRPCD_TRI_NO}, {"on", JRPCD_TRI_YES}, {"off", JRPCD_TRI_NO},
    {"1", JRPCD_TRI_YES},    {"0", JRPCD_TRI_NO},   {NULL, 0}};

/* A listener's stats: the yes/no words it took when it was a boolean
 * still mean what they did (answered, and now scoped to the caller). */
static const jrpcd_key_word_t stats_levels[] = {
    {"off", JRPCD_STATS_OFF},
    {"listener", JRPCD_STATS_LISTENER},
    {"full", JRPCD_STATS_FULL},
    {"no", JRPCD_STATS_OFF},
    {"yes", JRPCD_STATS_LISTENER},
    {"false", JRPCD_STATS_OFF},
    {"true", JRPCD_STATS_LISTENER},
    {"on", JRPCD_STATS_LISTENER},
    {"0", JRPCD_STATS_OFF},
    {"1", JRPCD_STATS_LISTENER},
    {NULL, 0}};

/* push_overflow: what a subscriber too slow for max_push_bytes gets. */
static const jrpcd_key_word_t push_overflow_words[] = {
    {"drop", 0}, {"close", 1}, {NULL, 0}};

static const jrpcd_key_word_t tls_versions[] = {
    {"1.2", 0}, {"1.3", 0}, {NULL, 0}};

/* In the order the "unknown key" message lists them. */
const jrpcd_key_t jrpcd_keys[] = {
    /* [server] */
    {"workers", SERVER(workers), UINT(0, 256), .def = "0", .restart = 1,
     .doc = "worker threads, each with its own loop; 0 = one per CPU"},
    {"parser", SERVER(parser), .type = JRPCD_KEY_WORD, .words = parsers,
     .what = "a parser", .def = "auto", .restart = 1,
     .doc = "JSON parser; auto picks native or simdjson by frame size"},
    {"plugin_dir", SERVER(plugin_dir), .type = JRPCD_KEY_STRING, .min = 1,
     .what = "a directory", .def = jrpcd_plugin_dir_default,
     .doc = "where a relative plugin path is looked for"},
    {"log_level", SERVER(log_level), .type = JRPCD_KEY_ENUM,
     .words = log_levels, .what = "a log level", .def = "info",
     .doc = "how much is logged (-v and -q shift it)"},
    {"strict_plugins", SERVER(strict_plugins), .type = JRPCD_KEY_BOOL,
     .def = "yes", .doc = "a plugin that fails to load stops the start"},
    {"user", SERVER(user), .type = JRPCD_KEY_STRING, .min = 1,
     .what = "a user name or uid", .check = jrpcd_user_known, .restart = 1,
     .doc = "serve as this user once sockets are bound and plugins loaded"},
    {"group", SERVER(group), .type = JRPCD_KEY_STRING, .min = 1,
     .what = "a group name or gid", .check = jrpcd_group_known, .restart = 1,
     .doc = "serve with this group (default: the user's own)"},
    {"max_frame_bytes", SERVER(max_frame_bytes), UINT(64, INT32_MAX),
     .def = "1048576", .restart = 1,
     .doc = "largest request frame (-32001 beyond)"},
    {"max_batch", SERVER(max_batch), UINT(1, 1000000), .def = "1000",
     .restart = 1, .doc = "most requests in one batch (-32002 beyond)"},
    {"max_response_bytes", SERVER(max_response_bytes), UINT(64, UINT32_MAX),
     .def = "16777216", .restart = 1,
     .doc = "largest result of one call (-32003 beyond)"},
    {"max_connections", SERVER(max_connections), UINT(1, 1000000),
     .def = "4096", .restart = 1,
     .doc = "client connections open at once, in all"},
    {"max_connections_per_peer", SERVER(max_connections_per_peer),
     UINT(0, 1000000), .def = "0", .restart = 1,
     .doc = "connections open at once per uid (unix) or address (tcp); "
            "0 = no limit"},
    {"peer_prefix_v6", SERVER(peer_prefix_v6), UINT(1, 128), .def = "64",
     .restart = 1,
     .doc = "max_connections_per_peer counts IPv6 peers by this many leading "
            "address bits"},
    {"idle_timeout_ms", SERVER(idle_timeout_ms), UINT(0, UINT32_MAX),
     .def = "60000", .restart = 1,
     .doc = "idle connections are closed after it; 0 = never"},
    {"shutdown_timeout_ms", SERVER(shutdown_timeout_ms), UINT(0, UINT32_MAX),
     .def = "5000", .restart = 1, .doc = "how long a graceful stop may take"},
    {"output_high_water", SERVER(output_high_water),
     UINT(4096, UINT64_C(1) << 40), .def = "1048576", .restart = 1,
     .doc = "reply bytes queued on a connection above which reading pauses"},
    {"max_pending_calls", SERVER(max_pending_calls), UINT(1, 1000000),
     .def = "1024", .restart = 1,
     .doc = "deferred calls of one connection above which reading pauses"},
    {"max_pending_calls_total", SERVER(max_pending_calls_total),
     UINT(1, 100000000), .def = "65536", .restart = 1,
     .doc = "deferred calls in the daemon (-32005 beyond)"},
    {"max_push_bytes", SERVER(max_push_bytes), UINT(4096, UINT64_C(1) << 40),
     .def = "262144", .restart = 1,
     .doc = "output queued on a connection above which notifications are "
            "dropped (rpc.lagged tells how many)"},
    {"push_overflow", SERVER(push_overflow_close), .type = JRPCD_KEY_ENUM,
     .words = push_overflow_words, .what = "drop or close", .def = "drop",
     .restart = 1,
     .doc = "beyond max_push_bytes: drop notifications, or close the "
            "connection"},
    {"max_subscriptions_per_connection",
     SERVER(max_subscriptions_per_connection), UINT(0, 100000000),
     .def = "1024", .restart = 1,
     .doc = "subscriptions one connection may hold (-32011 beyond)"},
    {"max_subscriptions", SERVER(max_subscriptions), UINT(0, UINT32_MAX),
     .def = "1000000", .restart = 1,
     .doc = "subscriptions in the daemon (-32011 beyond)"},
    {"parser_auto_threshold", SERVER(parser_auto_threshold), UINT(0, INT32_MAX),
     .words = auto_threshold_words, .def = "measured", .restart = 1,
     .doc = "parser = auto: simdjson from this many bytes"},
    {"early_reply_frames", SERVER(early_reply_frames), UINT(0, 1000000),
     .def = "32", .restart = 1,
     .doc = "replies so far are sent every this many frames of a read"},
    {"frame_timeout_ms", SERVER(frame_timeout_ms), UINT(0, UINT32_MAX),
     .def = "10000", .restart = 1,
     .doc = "ms a frame may take to arrive whole (-32009 beyond); 0 = never"},
    {"ws_ping_ms", SERVER(ws_ping_ms), UINT(0, UINT32_MAX), .def = "30000",
     .restart = 1,
     .doc = "websocket: a ping after this many ms without a word from the "
            "client, closed (1001) if unanswered as long; 0 = never"},
    {"call_timeout_ms", SERVER(call_timeout_ms), UINT(0, UINT32_MAX),
     .def = "30000",
     .doc = "ms a deferred call may take (-32004 beyond); 0 = never"},
    {"thread_pool", SERVER(thread_pool), UINT(0, JRPCD_THREAD_POOL_MAX),
     .def = "0", .restart = 1,
     .doc = "threads for handlers' jrpc_queue_work; 0 = twice the workers, "
            "at least 4"},
    {"max_header_bytes", SERVER(max_header_bytes), UINT(256, 65536),
     .def = "8192", .restart = 1,
     .doc = "largest request head on http and content-length listeners (431 "
            "beyond)"},
    {"drain_ms", SERVER(drain_ms), UINT(0, 3600000), .def = "0", .restart = 1,
     .doc = "on SIGTERM, ms of serving with /health at 503 before the stop"},
    {"validate_params", SERVER(validate_params), .type = JRPCD_KEY_BOOL,
     .def = "yes",
     .doc = "described methods' params are checked before the handler "
            "(-32602)"},
    {"slow_call_ms", SERVER(slow_call_ms), UINT(0, UINT32_MAX), .def = "1000",
     .restart = 1,
     .doc = "calls that take longer are logged and kept for rpc.stats; "
            "0 = off"},
    {"access_log", SERVER(access_log), .type = JRPCD_KEY_STRING, .min = 1,
     .what = "a file", .check = access_log_usable, .restart = 1,
     .doc = "a line per call (time, listener, peer, method, code, duration, "
            "bytes) appended here; reopened on SIGUSR1; unset = off"},
    {"access_log_format", SERVER(access_log_format), .type = JRPCD_KEY_ENUM,
     .words = access_log_formats, .what = "an access log format", .def = "text",
     .restart = 1, .doc = "access_log's lines: text or json (one object each)"},

    /* [listen NAME] */
    {"unix", LISTEN(path), .type = JRPCD_KEY_STRING, .min = 1,
     .what = "the socket's path", .check = unix_path_usable,
     .makes_kind = 1 + JRPCD_LISTEN_UNIX, .restart = 1,
     .doc = "listen on the Unix socket at this path"},
    {"tcp", LISTEN(host), .type = JRPCD_KEY_HOST_PORT,
     .offset2 = offsetof(jrpcd_listen_conf_t, port),
     .makes_kind = 1 + JRPCD_LISTEN_TCP, .restart = 1,
     .doc = "listen on TCP at this literal address and port"},
    {"mode", LISTEN(mode), .type = JRPCD_KEY_MODE, .max = 0777, .def = "0660",
     UNIX_ONLY, .restart = 1, .doc = "permission bits of the socket file"},
    {"owner", LISTEN(owner), .type = JRPCD_KEY_STRING, .min = 1,
     .what = "a user name or uid", UNIX_ONLY, .restart = 1,
     .doc = "user to own the socket file"},
    {"group", LISTEN(group), .type = JRPCD_KEY_STRING, .min = 1,
     .what = "a group name or gid", UNIX_ONLY, .restart = 1,
     .doc = "group of the socket file"},
    {"framing", LISTEN(framing), .type = JRPCD_KEY_ENUM, .words = framings,
     .what = "a framing", .def = "newline", .restart = 1,
     .doc = "how messages are delimited"},
    {"stats", LISTEN(stats), .type = JRPCD_KEY_ENUM, .words = stats_levels,
     .what = "a stats level",
     .kind_def = {[JRPCD_LISTEN_UNIX] = "listener", [JRPCD_LISTEN_TCP] = "off"},
     .restart = 1,
     .doc = "rpc.stats answers here (off: not), with what this caller may "
            "call and its own peer (listener), or everything (full); "
            "/metrics as much"},
    {"methods", LISTEN(methods), .type = JRPCD_KEY_LIST, .min = 1,
     .what = "the methods served here", .check = jrpcd_glob_check,
     .doc = "globs of the methods served here (others are -32601); all "
            "when unset"},
    {"discover", LISTEN(discover), .type = JRPCD_KEY_BOOL, .def = "yes",
     .doc = "rpc.discover answers here (whatever methods and [access] say), "
            "listing what the caller may call"},
    {"peers", LISTEN(peers), .type = JRPCD_KEY_LIST, .min = 1,
     .what = "the peers let in", .check = principal_parses,
     .doc = "who may connect: addresses and CIDR ranges (tcp), uid:, gid:, "
            "user:, group: (unix); anyone when unset"},
    {"tls_cert", LISTEN(tls_cert), .type = JRPCD_KEY_STRING, .min = 1,
     .what = "a PEM file", TCP_ONLY,
     .doc = "TLS on this listener: its certificate chain (PEM)"},
    {"tls_key", LISTEN(tls_key), .type = JRPCD_KEY_STRING, .min = 1,
     .what = "a PEM file", TCP_ONLY,
     .doc = "the private key of tls_cert (PEM)"},
    {"tls_client_ca", LISTEN(tls_client_ca), .type = JRPCD_KEY_STRING, .min = 1,
     .what = "a PEM file", TCP_ONLY,
     .doc = "mutual TLS: clients must present a certificate signed by these "
            "CAs"},
    {"tls_min_version", LISTEN(tls_min_version), .type = JRPCD_KEY_WORD,
     .words = tls_versions, .what = "a TLS version", TCP_ONLY,
     .doc = "the oldest TLS version accepted (unset: 1.2)"},
    {"tls_ciphers", LISTEN(tls_ciphers), .type = JRPCD_KEY_STRING, .min = 1,
     .what = "an OpenSSL cipher list", TCP_ONLY,
     .doc = "TLS 1.2 cipher list (OpenSSL syntax); unset: ECDHE and DHE "
            "with AES-GCM or ChaCha20-Poly1305 only"},
    {"verify_depth", LISTEN(verify_depth), UINT(0, 32), .def = "4", TCP_ONLY,
     .doc = "mutual TLS (tls_client_ca): most intermediate CAs a client's "
            "chain may have"},
    {"max_handshakes", LISTEN(max_handshakes), UINT(1, 1000000), .def = "256",
     TCP_ONLY, .restart = 1,
     .doc = "TLS handshakes in progress at once here; more are closed at "
            "accept"},
    {"health", LISTEN(health), .type = JRPCD_KEY_BOOL, .def = "yes",
     .http_only = 1, .restart = 1,
     .doc = "framing = http: GET /health answers (200 serving, 503 draining)"},
    {"metrics", LISTEN(metrics), .type = JRPCD_KEY_BOOL,
     .kind_def = {[JRPCD_LISTEN_UNIX] = "yes", [JRPCD_LISTEN_TCP] = "no"},
     .http_only = 1, .restart = 1,
     .doc = "framing = http: GET /metrics answers (Prometheus text format)"},
    {"tokens_file", LISTEN(tokens_file), .type = JRPCD_KEY_STRING, .min = 1,
     .what = "a tokens file", .http_only = 1,
     .doc = "framing = http: every request but GET /health needs "
            "Authorization: Bearer with a token of this file (NAME "
            "sha256:HEX lines); none when unset"},
    {"websocket", LISTEN(websocket), .type = JRPCD_KEY_BOOL, .def = "no",
     .http_only = 1, .restart = 1,
     .doc = "framing = http: GET with Upgrade: websocket switches the "
            "connection to WebSocket (RFC 6455)"},
    {"origins", LISTEN(origins), .type = JRPCD_KEY_LIST, .min = 1,
     .what = "the origins allowed", .http_only = 1, .restart = 1,
     .check = origin_parses,
     .doc = "framing = http: the browser origins (scheme://host[:port]) "
            "that may POST cross-origin or open a WebSocket; none when "
            "unset"},

    /* [plugin NAME]: its other keys go to the plugin. */
    {"path", PLUGIN(path), .type = JRPCD_KEY_STRING, .min = 1,
     .what = "the plugin's .so file",
     .doc = "the plugin's shared object, relative to plugin_dir"},
    {"timeout_ms", PLUGIN(timeout_ms), UINT(0, UINT32_MAX),
     .words = plugin_timeout_words, .def = "server",
     .doc = "call_timeout_ms for this plugin's methods; 0 = never"},
    {"validate_params", PLUGIN(validate_params), .type = JRPCD_KEY_ENUM,
     .words = tri_words, .what = "yes or no",
     .doc = "this plugin's methods: validate_params of [server] overridden"},

    /* [cluster]: push across a fleet through NATS (cluster.c). */
    {"nats", CLUSTER(cluster_nats), .type = JRPCD_KEY_LIST, .min = 1,
     .what = "NATS server URLs", .check = nats_url_parses,
     .doc = "the NATS servers every publish goes through to the other "
            "instances (nats://HOST:PORT or tls://HOST:PORT, any number)"},
    {"nats_creds", CLUSTER(cluster_nats_creds), .type = JRPCD_KEY_STRING,
     .min = 1, .what = "a credentials file",
     .doc = "the broker connection's credentials (a NATS .creds file: JWT "
            "and seed); none when unset"},
    {"nats_tls_ca", CLUSTER(cluster_nats_tls_ca), .type = JRPCD_KEY_STRING,
     .min = 1, .what = "a PEM file",
     .doc = "TLS to the broker, its certificate checked against these CAs "
            "(PEM)"},
    {"subject_prefix", CLUSTER(cluster_subject_prefix),
     .type = JRPCD_KEY_STRING, .min = 1, .what = "a subject prefix",
     .check = subject_prefix_parses, .def = "jrpcd",
     .doc = "subjects are PREFIX.MODULE.TOPIC (topics escaped); fleets that "
            "share a broker and must not hear each other differ in it"},
    {"cluster_buffer_bytes", CLUSTER(cluster_buffer_bytes),
     UINT(1024, UINT64_C(1) << 32), .def = "8388608",
     .doc = "broker-bound messages held while the broker is away; beyond, "
            "they are dropped and counted"},
};
const size_t jrpcd_nkeys = sizeof jrpcd_keys / sizeof jrpcd_keys[0];

const char *const jrpcd_kind_names[JRPCD_LISTEN_KINDS] = {
    [JRPCD_LISTEN_UNIX] = "unix", [JRPCD_LISTEN_TCP] = "tcp"};
const char *const jrpcd_kind_plurals[JRPCD_LISTEN_KINDS] = {
    [JRPCD_LISTEN_UNIX] = "unix sockets", [JRPCD_LISTEN_TCP] = "tcp listeners"};

static const jrpcd_key_word_t *find_word(const jrpcd_key_word_t *w,
                                         const char *value) {
  for (; w && w->word; w++)
    if (strcasecmp(value, w->word) == 0)
      return w;
  return NULL;
}

const char *jrpcd_section_name(jrpcd_section_t s) {
  static const char *const names[] = {
      [JRPCD_SEC_SERVER] = "server",
      [JRPCD_SEC_LISTEN] = "listen",
      [JRPCD_SEC_PLUGIN] = "plugin",
      [JRPCD_SEC_CLUSTER] = "cluster",
  };
  return (size_t)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

const jrpcd_key_t *jrpcd_key_find(jrpcd_section_t s, const char *name) {
  for (size_t i = 0; i < jrpcd_nkeys; i++)
    if (jrpcd_keys[i].section == s && strcmp(jrpcd_keys[i].name, name) == 0)
      return &jrpcd_keys[i];
  return NULL;
}

int jrpcd_listen_key_line(const jrpcd_listen_conf_t *l, const char *name) {
  const jrpcd_key_t *k = jrpcd_key_find(JRPCD_SEC_LISTEN, name);
  size_t i = k ? (size_t)(k - jrpcd_keys) : JRPCD_KEY_ROWS_MAX;
  return i < JRPCD_KEY_ROWS_MAX ? l->key_lines[i] : 0;
}

const jrpcd_key_t *jrpcd_key_nearest(jrpcd_section_t s, const char *name) {
  const jrpcd_key_t *best = NULL;
  int best_d = 0;
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    if (jrpcd_keys[i].section != s)
      continue;
    int d = jrpc__name_typo(name, jrpcd_keys[i].name);
    if (d >= 0 && (!best || d < best_d)) {
      best = &jrpcd_keys[i];
      best_d = d;
    }
  }
  return best;
}

/* Appends to out[*off..cap), keeping it a string; cut to fit. */
__attribute__((format(printf, 4, 5))) static void
append(char *out, size_t cap, size_t *off, const char *fmt, ...) {
  if (*off >= cap)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(out + *off, cap - *off, fmt, ap);
  va_end(ap);
  if (n > 0)
    *off = *off + (size_t)n < cap ? *off + (size_t)n : cap;
}

void jrpcd_key_names(jrpcd_section_t s, char *out, size_t cap) {
  size_t off = 0;
  if (cap)
    out[0] = '\0';
  for (size_t i = 0; i < jrpcd_nkeys; i++)
    if (jrpcd_keys[i].section == s)
      append(out, cap, &off, "%s%s", off ? ", " : "", jrpcd_keys[i].name);
}

const char *jrpcd_key_default(const jrpcd_key_t *k, jrpcd_listen_kind_t kind) {
  if (k->section == JRPCD_SEC_LISTEN && (unsigned)kind < JRPCD_LISTEN_KINDS &&
      k->kind_def[kind])
    return k->kind_def[kind];
  return k->def;
}

int jrpcd_log_level_parse(const char *s) {
  const jrpcd_key_word_t *w = s ? find_word(log_levels, s) : NULL;
  return w ? (int)w->value : -1;
}

/* ------------------------------------------------------------------ */
/* Fields                                                              */
/* ------------------------------------------------------------------ */

static void *field(void *base, size_t off) {
  return (char *)base + off;
}

static const void *cfield(const void *base, size_t off) {
  return (const char *)base + off;
}

/* Unsigned fields of any width (and int-sized enums and ints holding
 * values >= 0, which share the representation). */
static void store_uint(void *p, size_t size, uint64_t v) {
  uint8_t u8 = (uint8_t)v;
  uint16_t u16 = (uint16_t)v;
  uint32_t u32 = (uint32_t)v;
  switch (size) {
  case 1:
    memcpy(p, &u8, 1);
    break;
  case 2:
    memcpy(p, &u16, 2);
    break;
  case 4:
    memcpy(p, &u32, 4);
    break;
  default:
    memcpy(p, &v, 8);
    break;
  }
}

static uint64_t load_uint(const void *p, size_t size) {
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
  switch (size) {
  case 1:
    memcpy(&u8, p, 1);
    return u8;
  case 2:
    memcpy(&u16, p, 2);
    return u16;
  case 4:
    memcpy(&u32, p, 4);
    return u32;
  default:
    memcpy(&u64, p, 8);
    return u64;
  }
}

static void replace_ptr(void *base, size_t off, void *v) {
  void *old;
  memcpy(&old, field(base, off), sizeof old);
  free(old);
  memcpy(field(base, off), &v, sizeof v);
}

static const void *load_ptr(const void *base, size_t off) {
  const void *v;
  memcpy(&v, cfield(base, off), sizeof v);
  return v;
}

int jrpcd_key_same(const jrpcd_key_t *k, const void *a, const void *b) {
  char ta[1024], tb[1024];
  int sa = jrpcd_key_format(k, a, ta, sizeof ta);
  int sb = jrpcd_key_format(k, b, tb, sizeof tb);
  return sa == sb && (!sa || strcmp(ta, tb) == 0);
}

int jrpcd_key_in_use(const jrpcd_key_t *k, const void *base) {
  switch (k->type) {
  case JRPCD_KEY_WORD:
  case JRPCD_KEY_STRING:
  case JRPCD_KEY_LIST:
  case JRPCD_KEY_HOST_PORT:
    return load_ptr(base, k->offset) != NULL;
  default:
    return load_uint(cfield(base, k->offset), k->size) != 0;
  }
}

void jrpcd_key_free(const jrpcd_key_t *k, void *base) {
  switch (k->type) {
  case JRPCD_KEY_WORD:
  case JRPCD_KEY_STRING:
  case JRPCD_KEY_LIST:
  case JRPCD_KEY_HOST_PORT:
    replace_ptr(base, k->offset, NULL);
    break;
  default:
    break;
  }
}

/* ------------------------------------------------------------------ */
/* Values                                                              */
/* ------------------------------------------------------------------ */

__attribute__((format(printf, 3, 4))) static int
why_not(char *why, size_t whylen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (why && whylen)
    vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
  return -1;
}

/* "a, b or c" with sep ", " and last " or ". */
static void join_words(const jrpcd_key_word_t *w, const char *sep,
                       const char *last, char *out, size_t cap) {
  size_t off = 0, n = 0;
  if (cap)
    out[0] = '\0';
  while (w && w[n].word)
    n++;
  for (size_t i = 0; i < n; i++)
    append(out, cap, &off, "%s%s",
           i == 0      ? ""
           : i + 1 < n ? sep
                       : last,
           w[i].word);
}

/* Plain decimal only: a sign, a space or a suffix is more likely a typo
 * than something to guess the meaning of. */
static int parse_uint(const jrpcd_key_t *k, const char *value, uint64_t *out,
                      char *why, size_t whylen) {
  const jrpcd_key_word_t *named = find_word(k->words, value);
  if (named) {
    *out = named->value;
    return 0;
  }
  const char *s = value;
  int negative = *s == '-';
  if (negative)
    s++;
  uint64_t v = 0;
  int overflow = 0, digits = 0;
  for (; isdigit((unsigned char)*s); s++, digits++) {
    unsigned d = (unsigned)(*s - '0');
    if (v > (UINT64_MAX - d) / 10)
      overflow = 1;
    else
      v = v * 10 + d;
  }
  if (!digits || *s)
    return why_not(why, whylen,
                   "\"%s\" is not a number (%" PRIu64 " .. %" PRIu64 ")", value,
                   k->min, k->max);
  if (overflow || negative || v < k->min || v > k->max)
    return why_not(why, whylen,
                   "\"%s\" is out of range (%" PRIu64 " .. %" PRIu64 ")", value,
                   k->min, k->max);
  *out = v;
  return 0;
}

static const char *const yes_words[] = {"yes", "true", "on", "1"};
static const char *const no_words[] = {"no", "false", "off", "0"};

static int parse_bool(const char *value, int *out, char *why, size_t whylen) {
  for (size_t i = 0; i < sizeof yes_words / sizeof yes_words[0]; i++) {
    if (strcasecmp(value, yes_words[i]) == 0) {
      *out = 1;
      return 0;
    }
    if (strcasecmp(value, no_words[i]) == 0) {
      *out = 0;
      return 0;
    }
  }
  return why_not(why, whylen,
                 "\"%s\" is not yes or no (yes/no, true/false, on/off, 1/0)",
                 value);
}

static int parse_mode(const jrpcd_key_t *k, const char *value, uint64_t *out,
                      char *why, size_t whylen) {
  uint64_t v = 0;
  const char *s = value;
  for (; *s >= '0' && *s <= '7' && v <= k->max; s++)
    v = v * 8 + (uint64_t)(*s - '0');
  if (!*value || *s || v > k->max)
    return why_not(why, whylen, "\"%s\" is not an octal mode (0 .. %#llo)",
                   value, (unsigned long long)k->max);
  *out = v;
  return 0;
}

/* "127.0.0.1:7400", "[::1]:7400": literal addresses only, so that what a
 * listener binds to never depends on name resolution at start-up. The
 * address goes to host (malloc'd), the port to *port. */
static int parse_host_port(const char *value, char **host, uint16_t *port,
                           char *why, size_t whylen) {
  const char *h, *h_end, *p;
  int family;
  if (value[0] == '[') {
    h = value + 1;
    h_end = strchr(h, ']');
    if (!h_end || h_end[1] != ':')
      goto bad_form;
    p = h_end + 2;
    family = AF_INET6;
  } else {
    h = value;
    h_end = strrchr(value, ':');
    if (!h_end)
      goto bad_form;
    p = h_end + 1;
    family = AF_INET;
  }
  char text[INET6_ADDRSTRLEN];
  size_t hn = (size_t)(h_end - h);
  unsigned char addr[sizeof(struct in6_addr)];
  if (hn >= sizeof text)
    goto bad_address;
  memcpy(text, h, hn);
  text[hn] = '\0';
  if (inet_pton(family, text, addr) != 1)
    goto bad_address;

  uint64_t v = 0;
  const char *s = p;
  for (; isdigit((unsigned char)*s) && v <= 65535; s++)
    v = v * 10 + (uint64_t)(*s - '0');
  if (s == p || *s || v < 1 || v > 65535)
    return why_not(why, whylen, "port \"%s\" is not a port number (1 .. 65535)",
                   p);
  if (!(*host = strdup(text)))
    return -2;
  *port = (uint16_t)v;
  return 0;

bad_form:
  return why_not(why, whylen,
                 "\"%s\" is not ADDRESS:PORT (like 127.0.0.1:7400, "
                 "0.0.0.0:7400, [::1]:7400 or [::]:7400)",
                 value);
bad_address:
  if (family == AF_INET6)
    return why_not(why, whylen, "\"%.*s\" is not an IPv6 address", (int)hn, h);
  return why_not(why, whylen,
                 "\"%.*s\" is not an IPv4 address (a.b.c.d; host names are "
                 "not looked up; IPv6 goes in brackets: [::1]:7400)",
                 (int)hn, h);
}

/* Words separated by spaces, as one block: the NULL-terminated array, then
 * the words. */
static int parse_list(const jrpcd_key_t *k, const char *value, char ***out,
                      char *why, size_t whylen) {
  size_t n = 0, len = strlen(value);
  for (const char *s = value; *s;) {
    while (isspace((unsigned char)*s))
      s++;
    if (!*s)
      break;
    n++;
    while (*s && !isspace((unsigned char)*s))
      s++;
  }
  if (n == 0 && k->min > 0)
    return why_not(why, whylen, "is empty (%s)", k->what ? k->what : "words");
  if (n < k->min || (k->max && n > k->max))
    return why_not(why, whylen,
                   "\"%s\" has %zu words (%" PRIu64 " .. %" PRIu64 ")", value,
                   n, k->min, k->max);
  char **list = malloc((n + 1) * sizeof *list + len + 1);
  if (!list)
    return -2;
  char *text = (char *)(list + n + 1);
  memcpy(text, value, len + 1);
  size_t i = 0;
  for (char *s = text; *s;) {
    while (isspace((unsigned char)*s))
      *s++ = '\0';
    if (!*s)
      break;
    list[i++] = s;
    while (*s && !isspace((unsigned char)*s))
      s++;
  }
  list[n] = NULL;
  for (i = 0; k->check && i < n; i++)
    if (k->check(list[i], why, whylen) != 0) {
      free(list);
      return -1;
    }
  *out = list;
  return 0;
}

int jrpcd_key_parse(const jrpcd_key_t *k, const char *value, void *base,
                    char *why, size_t whylen) {
  uint64_t v = 0;
  int b = 0;
  switch (k->type) {
  case JRPCD_KEY_UINT:
    if (parse_uint(k, value, &v, why, whylen) != 0)
      return -1;
    store_uint(field(base, k->offset), k->size, v);
    return 0;
  case JRPCD_KEY_BOOL:
    if (parse_bool(value, &b, why, whylen) != 0)
      return -1;
    store_uint(field(base, k->offset), k->size, (uint64_t)b);
    return 0;
  case JRPCD_KEY_MODE:
    if (parse_mode(k, value, &v, why, whylen) != 0)
      return -1;
    store_uint(field(base, k->offset), k->size, v);
    return 0;
  case JRPCD_KEY_ENUM:
  case JRPCD_KEY_WORD: {
    const jrpcd_key_word_t *w = find_word(k->words, value);
    if (!w) {
      char list[256];
      join_words(k->words, ", ", " or ", list, sizeof list);
      return why_not(why, whylen, "\"%s\" is not %s (%s)", value, k->what,
                     list);
    }
    if (k->type == JRPCD_KEY_ENUM) {
      store_uint(field(base, k->offset), k->size, w->value);
      return 0;
    }
    char *d = strdup(w->word);
    if (!d)
      return -2;
    replace_ptr(base, k->offset, d);
    return 0;
  }
  case JRPCD_KEY_STRING: {
    if (!*value && k->min > 0)
      return why_not(why, whylen, "is empty (%s)", k->what);
    if (k->check && k->check(value, why, whylen) != 0)
      return -1;
    char *d = strdup(value);
    if (!d)
      return -2;
    replace_ptr(base, k->offset, d);
    return 0;
  }
  case JRPCD_KEY_LIST: {
    char **list = NULL;
    int rc = parse_list(k, value, &list, why, whylen);
    if (rc == 0)
      replace_ptr(base, k->offset, list);
    return rc;
  }
  case JRPCD_KEY_HOST_PORT: {
    char *host = NULL;
    uint16_t port = 0;
    int rc = parse_host_port(value, &host, &port, why, whylen);
    if (rc == 0) {
      replace_ptr(base, k->offset, host);
      memcpy(field(base, k->offset2), &port, sizeof port);
    }
    return rc;
  }
  }
  return why_not(why, whylen, "has no parser (type %d)", (int)k->type);
}

/* ------------------------------------------------------------------ */
/* Printing                                                            */
/* ------------------------------------------------------------------ */

static const char *word_of(const jrpcd_key_word_t *w, uint64_t v) {
  for (; w && w->word; w++)
    if (w->value == v)
      return w->word;
  return NULL;
}

int jrpcd_key_format(const jrpcd_key_t *k, const void *base, char *out,
                     size_t cap) {
  size_t off = 0;
  if (cap)
    out[0] = '\0';
  const void *p = cfield(base, k->offset);
  switch (k->type) {
  case JRPCD_KEY_UINT:
  case JRPCD_KEY_ENUM: {
    uint64_t v = load_uint(p, k->size);
    const char *w = word_of(k->words, v);
    if (!w && k->type == JRPCD_KEY_ENUM)
      return 0; /* a value no word gives: left unset (JRPCD_TRI_UNSET) */
    if (w)
      append(out, cap, &off, "%s", w);
    else
      append(out, cap, &off, "%" PRIu64, v);
    return 1;
  }
  case JRPCD_KEY_BOOL:
    append(out, cap, &off, "%s", load_uint(p, k->size) ? "yes" : "no");
    return 1;
  case JRPCD_KEY_MODE:
    append(out, cap, &off, "%04llo", (unsigned long long)load_uint(p, k->size));
    return 1;
  case JRPCD_KEY_WORD:
  case JRPCD_KEY_STRING: {
    const char *s = load_ptr(base, k->offset);
    if (!s)
      return 0;
    append(out, cap, &off, "%s", s);
    return 1;
  }
  case JRPCD_KEY_LIST: {
    char *const *list = load_ptr(base, k->offset);
    if (!list)
      return 0;
    for (size_t i = 0; list[i]; i++)
      append(out, cap, &off, "%s%s", i ? " " : "", list[i]);
    return 1;
  }
  case JRPCD_KEY_HOST_PORT: {
    const char *host = load_ptr(base, k->offset);
    uint16_t port;
    if (!host)
      return 0;
    memcpy(&port, cfield(base, k->offset2), sizeof port);
    int v6 = strchr(host, ':') != NULL;
    append(out, cap, &off, "%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "",
           (unsigned)port);
    return 1;
  }
  }
  return 0;
}

void jrpcd_key_describe(const jrpcd_key_t *k, char *out, size_t cap) {
  size_t off = 0;
  if (cap)
    out[0] = '\0';
  switch (k->type) {
  case JRPCD_KEY_UINT:
    for (const jrpcd_key_word_t *w = k->words; w && w->word; w++)
      append(out, cap, &off, "%s|", w->word);
    append(out, cap, &off, "%" PRIu64 " .. %" PRIu64, k->min, k->max);
    break;
  case JRPCD_KEY_BOOL:
    append(out, cap, &off, "yes|no");
    break;
  case JRPCD_KEY_ENUM:
  case JRPCD_KEY_WORD:
    join_words(k->words, "|", "|", out, cap);
    break;
  case JRPCD_KEY_STRING:
    append(out, cap, &off, k->min ? "text" : "text or nothing");
    break;
  case JRPCD_KEY_LIST:
    append(out, cap, &off, "words");
    break;
  case JRPCD_KEY_MODE:
    append(out, cap, &off, "octal 0 .. %#llo", (unsigned long long)k->max);
    break;
  case JRPCD_KEY_HOST_PORT:
    append(out, cap, &off, "ADDRESS:PORT");
    break;
  }
}
