/* config.h - jrpcd's configuration: the INI file of conf/jrpcd.conf, read
 * with inih into one plain struct. Every error names the file, the line and
 * the key; nothing is half-applied (a failed load leaves *c zeroed).
 *
 * Each key's range, default and field are a row of the table in
 * config_keys.c, the one place they are written: a new key is its field
 * here plus its row there. */
#ifndef JRPCD_CONFIG_H
#define JRPCD_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "access.h"
#include "frame.h"

typedef enum {
  JRPCD_LISTEN_UNIX = 0,
  JRPCD_LISTEN_TCP = 1
} jrpcd_listen_kind_t;
#define JRPCD_LISTEN_KINDS 2 /* how many there are */

/* More than the rows of the key table (config_keys.c), which
 * test_config_keys checks. */
#define JRPCD_KEY_ROWS_MAX 96

typedef struct jrpcd_listen_conf {
  char *name; /* from [listen NAME] */
  int line;   /* line of the section header, for messages */
  /* Per row of the key table: the line that set it here, 0 if none (for
   * messages formed after the reading: jrpcd_listen_key_line). */
  int key_lines[JRPCD_KEY_ROWS_MAX];
  jrpcd_listen_kind_t kind;
  /* unix */
  char *path;
  int mode;    /* permission bits of the socket file */
  char *owner; /* user name or numeric uid; NULL = leave as created */
  char *group; /* group name or numeric gid; NULL = leave as created */
  /* tcp: "127.0.0.1:7400", "[::1]:7400", "0.0.0.0:7400", "[::]:7400" */
  char *host; /* literal address without brackets */
  uint16_t port;
  jrpc__framing_t framing;
  int stats;      /* JRPCD_STATS_*: rpc.stats here, and how much it and
                     /metrics show */
  char **peers;   /* principals let in (access.h), NULL-terminated; NULL:
                     anyone */
  char **methods; /* globs of the methods served here; NULL: all */
  int discover;   /* rpc.discover answers here, whatever methods says */
  /* tcp: TLS when tls_cert is set (daemon/tls.h); files are read when the
   * plugin generation loads, so SIGHUP reads them again. */
  char *tls_cert, *tls_key; /* PEM files */
  char *tls_client_ca;      /* PEM: mutual TLS; NULL: no client cert */
  char *tls_min_version;    /* "1.2" or "1.3" */
  char *tls_ciphers;        /* NULL: JRPCD_TLS_CIPHERS (tls.h) */
  int health;               /* framing = http: GET /health answers */
  int metrics;              /* framing = http: GET /metrics answers */
  char *tokens_file; /* framing = http: bearer tokens (tokens.h); NULL: none */
  int websocket;     /* framing = http: the upgrade to WebSocket answered */
  char **origins;    /* framing = http: browser origins allowed; NULL: none */
  /* tcp with TLS: intermediate CAs a client chain may have; handshakes in
   * progress at once (more are closed at accept). */
  uint32_t verify_depth;
  uint32_t max_handshakes;
} jrpcd_listen_conf_t;

typedef struct jrpcd_plugin_conf {
  char *name; /* from [plugin NAME] */
  int line;
  char *path; /* resolved: as written if absolute, else plugin_dir/path */
  /* The section's other keys, in file order: key, value, key, value, ...,
   * NULL. Handed to the plugin's init (jrpc_conf_get). */
  char **kv;
  size_t nkv;    /* number of pairs */
  int *kv_lines; /* the line of each pair, for messages */
  /* Its methods' call timeout, or JRPCD_TIMEOUT_SERVER: call_timeout_ms.
   * A method's own "x-jrpcd-timeout-ms" overrides either. */
  uint64_t timeout_ms;
  int validate_params; /* JRPCD_TRI_*: unset (the server's), yes or no */
} jrpcd_plugin_conf_t;

#define JRPCD_TIMEOUT_SERVER UINT64_MAX
/* libuv's own limit on its thread pool. */
#define JRPCD_THREAD_POOL_MAX 1024

/* A listener's `stats`: rpc.stats not answered; answered (and /metrics
 * too) with only what the caller may call and its own calls' peer; or
 * with every method and every slow call's peer (introspect.h). */
enum { JRPCD_STATS_OFF = 0, JRPCD_STATS_LISTENER = 1, JRPCD_STATS_FULL = 2 };

/* A plugin's yes/no that may be left to the [server] key of that name. */
enum { JRPCD_TRI_UNSET = 0, JRPCD_TRI_YES = 1, JRPCD_TRI_NO = 2 };

/* [server] access_log_format. */
enum { JRPCD_ALOG_TEXT = 0, JRPCD_ALOG_JSON = 1 };

#define JRPCD_AUTO_MEASURED UINT32_MAX /* the figure measured per kernel */

typedef struct jrpcd_config {
  char *file;       /* path as given, or "(built-in)" */
  unsigned workers; /* 0 in the file = one per CPU (resolved) */
  char *parser;     /* "native", "jsmn", "simdjson", "auto" */
  char *plugin_dir;
  int log_level;      /* JRPC_LOG_ERROR .. JRPC_LOG_DEBUG */
  int strict_plugins; /* 1: a plugin failing to load is fatal */
  char *user;         /* serve as this user (privs.h); NULL: as started */
  char *group;        /* and group; NULL: the user's own */
  uint32_t max_frame_bytes;
  uint32_t max_batch;
  uint64_t max_response_bytes;
  uint32_t max_connections;          /* per daemon */
  uint32_t max_connections_per_peer; /* per uid (unix) or address (tcp);
                                        0 = no limit */
  uint32_t peer_prefix_v6;           /* IPv6: bits that name one peer */
  uint32_t idle_timeout_ms;          /* 0 = never */
  uint32_t ws_ping_ms;       /* websocket keepalive ping interval; 0 = none */
  uint32_t frame_timeout_ms; /* a frame must be whole this long after its
                                first byte; 0 = never */
  uint32_t shutdown_timeout_ms;
  uint64_t output_high_water;       /* pause reading above */
  uint32_t max_pending_calls;       /* deferred calls per connection before
                                       reading pauses */
  uint32_t parser_auto_threshold;   /* parser = auto: simdjson from this many
                                       bytes, or JRPCD_AUTO_MEASURED */
  uint32_t max_pending_calls_total; /* deferred calls in the daemon; -32005
                                       beyond */
  uint64_t max_push_bytes;          /* notifications dropped above */
  int push_overflow_close;          /* push_overflow = close */
  uint32_t max_subscriptions_per_connection;
  uint64_t max_subscriptions;  /* in the daemon */
  uint32_t early_reply_frames; /* replies so far go out after this many
                                  frames of one read; 0 = only at the
                                  read's end */
  uint32_t call_timeout_ms;    /* a deferred call is answered -32004 after it;
                                  0 = never */
  uint32_t thread_pool;        /* jrpc_queue_work's threads; 0 in the file =
                                  derived from workers (resolved) */
  uint32_t max_header_bytes;   /* http, content-length: largest head (431) */
  uint32_t drain_ms;           /* SIGTERM: /health says 503 this long first */
  int validate_params;   /* described methods' params checked (validate.h) */
  uint32_t slow_call_ms; /* calls that take longer are logged; 0 = off */
  char *access_log;      /* a line per call goes here; NULL: off */
  int access_log_format; /* JRPCD_ALOG_TEXT or _JSON */
  jrpcd_listen_conf_t *listens;
  size_t nlistens;
  jrpcd_plugin_conf_t *plugins;
  size_t nplugins;
  /* [access]: who may call what (access.h); has_access: the section is
   * there (then every connection gets its decisions at accept). */
  jrpcd_access_t access;
  int has_access;
  /* [cluster] (cluster.h): push across a fleet through NATS; has_cluster:
   * the section is there (then the broker connection is made). */
  char **cluster_nats;           /* the servers' URLs, NULL-terminated */
  char *cluster_nats_creds;      /* a credentials file (JWT and seed) */
  char *cluster_nats_tls_ca;     /* TLS to the broker: CAs to trust */
  char *cluster_subject_prefix;  /* subjects are PREFIX.MODULE.TOPIC */
  uint64_t cluster_buffer_bytes; /* broker-bound bytes held while away */
  int has_cluster;
} jrpcd_config_t;

/* Reads and checks FILE. 0, or -1 with "FILE:LINE: [section] key: why"
 * (or "FILE: why" for whole-file problems) in err. */
int jrpcd_config_load(jrpcd_config_t *c, const char *file, char *err,
                      size_t errlen);

/* The same from text in memory; `name` stands for the file in messages. */
int jrpcd_config_load_string(jrpcd_config_t *c, const char *text,
                             const char *name, char *err, size_t errlen);

void jrpcd_config_free(jrpcd_config_t *c);

#endif
