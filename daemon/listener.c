/* listener.c - see listener.h. */
#include "listener.h"

#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "sockdir.h"
#include "userdb.h"

#define BACKLOG 1024

static int fail(char *err, size_t errlen, const jrpcd_listener_t *l,
                const char *what, int e) {
  snprintf(err, errlen, "[listen %s] %s: %s: %s", l->name, l->desc, what,
           strerror(e));
  return -1;
}

/* A numeric id, or a user's (group: a group's) name from the database:
 * 0 and *id, else -1. */
static int lookup_id(const char *s, int group, uint32_t *id) {
  char *end;
  long v = strtol(s, &end, 10);
  jrpcd_user_t u;
  if (*s && !*end && v >= 0)
    *id = (uint32_t)v;
  else if (group)
    return jrpcd_group_by_name(s, id) == 0 ? 0 : -1;
  else if (jrpcd_user_by_name(s, &u) == 0)
    *id = u.uid;
  else
    return -1;
  return 0;
}

/* The path exists: replace it only if it is a socket nobody serves, made
 * by us or for the owner this listener gives its socket (a previous run's),
 * never another user's. */
static int clear_stale(jrpcd_listener_t *l, const struct sockaddr_un *sa,
                       uid_t owner, char *err, size_t errlen) {
  const char *path = sa->sun_path;
  struct stat st;
  if (lstat(path, &st) != 0)
    return errno == ENOENT ? 0 : fail(err, errlen, l, "stat", errno);
  if (!S_ISSOCK(st.st_mode)) {
    snprintf(err, errlen,
             "[listen %s] %s: the path exists and is not a socket; "
             "refusing to replace it",
             l->name, path);
    return -1;
  }
  int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0)
    return fail(err, errlen, l, "socket", errno);
  int rc = connect(probe, (const struct sockaddr *)sa, sizeof(*sa));
  int e = errno;
  close(probe);
  if (rc == 0) {
    snprintf(err, errlen,
             "[listen %s] %s: another process is serving on this socket "
             "(is jrpcd already running?)",
             l->name, path);
    return -1;
  }
  if (e != ECONNREFUSED && e != ENOENT)
    return fail(err, errlen, l, "probing the existing socket", e);
  if (st.st_uid != geteuid() && st.st_uid != owner) {
    snprintf(err, errlen,
             "[listen %s] %s: a socket nobody serves, but it belongs to uid "
             "%u, not to us: refusing to remove another user's file (remove "
             "it by hand if it is a leftover)",
             l->name, path, (unsigned)st.st_uid);
    return -1;
  }
  /* Nobody listens: a leftover of a process that died. */
  if (unlink(path) != 0 && errno != ENOENT)
    return fail(err, errlen, l, "removing the stale socket", errno);
  return 0;
}

/* Removes the socket file if it is still the one our bind made: another
 * jrpcd may have replaced it since (after someone deleted ours). */
static void remove_ours(const jrpcd_listener_t *l) {
  struct stat st;
  if (l->path && lstat(l->path, &st) == 0 && S_ISSOCK(st.st_mode) &&
      st.st_dev == l->dev && st.st_ino == l->ino)
    unlink(l->path);
}

/* Binds l->fd at c->path with the section's mode and owner already on the
 * file when the path appears.
 *
 * bind() makes the socket file by name, and a chmod or chown by that name
 * afterwards acts on whatever the name holds by then: had someone able to
 * write the directory put a symbolic link there in between, root would
 * give the link's target our mode and owner (fchmodat cannot refuse to
 * follow a link on Linux, and the socket's fd does not reach the file). So
 * the socket is bound as "s" in a directory mkdtemp makes beside the path,
 * 0700 and ours, which nobody else can enter or change; mode and owner are
 * set there through that directory's fd; and link() then gives it its
 * name. link() neither follows nor replaces what is at the name: if
 * anything appeared there since clear_stale, the start fails rather than
 * remove it. Sockets are found by their inode, so the link serves. */
static int bind_private(jrpcd_listener_t *l, const jrpcd_listen_conf_t *c,
                        uid_t uid, gid_t gid, char *err, size_t errlen) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  char tmpdir[sizeof(sa.sun_path)];
  const char *slash = strrchr(c->path, '/');
  int dlen = slash ? (int)(slash - c->path) + 1 : 0;
  if ((size_t)snprintf(tmpdir, sizeof tmpdir, "%.*s" JRPCD_SOCKET_TEMP_DIR,
                       dlen, c->path) >= sizeof tmpdir ||
      (size_t)snprintf(sa.sun_path, sizeof sa.sun_path,
                       "%s/" JRPCD_SOCKET_TEMP_NAME,
                       tmpdir) >= sizeof sa.sun_path) {
    snprintf(err, errlen, "[listen %s] %s: path too long", l->name, c->path);
    return -1;
  }
  if (!mkdtemp(tmpdir))
    return fail(err, errlen, l, "making a private directory for the bind",
                errno);
  /* Only the X's have changed: the same length as checked above. */
  memcpy(sa.sun_path, tmpdir, strlen(tmpdir));
  int rc = -1, linked = 0;
  struct stat st;
  int dfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    fail(err, errlen, l, tmpdir, errno);
  } else if (fstat(dfd, &st) != 0 || st.st_uid != geteuid() ||
             (st.st_mode & 077)) {
    snprintf(err, errlen, "[listen %s] %s was replaced during the bind",
             l->name, tmpdir);
  } else if (bind(l->fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
    fail(err, errlen, l, "bind", errno);
  } else if (fstatat(dfd, JRPCD_SOCKET_TEMP_NAME, &st, AT_SYMLINK_NOFOLLOW) !=
                 0 ||
             !S_ISSOCK(st.st_mode)) {
    snprintf(err, errlen, "[listen %s] %s: the bound socket is missing",
             l->name, tmpdir);
  } else if (fchmodat(dfd, JRPCD_SOCKET_TEMP_NAME, (mode_t)c->mode, 0) != 0) {
    fail(err, errlen, l, "chmod", errno);
  } else if ((c->owner || c->group) &&
             fchownat(dfd, JRPCD_SOCKET_TEMP_NAME, uid, gid,
                      AT_SYMLINK_NOFOLLOW) != 0) {
    fail(err, errlen, l, "chown", errno);
  } else if (linkat(dfd, JRPCD_SOCKET_TEMP_NAME, AT_FDCWD, c->path, 0) != 0) {
    if (errno == EEXIST)
      snprintf(err, errlen,
               "[listen %s] %s: the path appeared while the socket was "
               "being made; refusing to replace it",
               l->name, c->path);
    else
      fail(err, errlen, l, "link", errno);
  } else {
    linked = 1;
    l->dev = st.st_dev;
    l->ino = st.st_ino;
    rc = 0;
  }
  if (dfd >= 0) {
    unlinkat(dfd, JRPCD_SOCKET_TEMP_NAME, 0);
    close(dfd);
  }
  rmdir(tmpdir);
  if (linked)
    l->path = strdup(c->path);
  return rc;
}

static int open_unix(jrpcd_listener_t *l, const jrpcd_listen_conf_t *c,
                     char *err, size_t errlen) {
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof(sa));
  sa.sun_family = AF_UNIX;
  if (strlen(c->path) >= sizeof(sa.sun_path)) {
    snprintf(err, errlen, "[listen %s] %s: path too long", l->name, c->path);
    return -1;
  }
  memcpy(sa.sun_path, c->path, strlen(c->path));
  uint32_t uid = (uint32_t)-1;
  uint32_t gid = (uint32_t)-1;
  if (c->owner && lookup_id(c->owner, 0, &uid)) {
    snprintf(err, errlen, "[listen %s] owner: no such user \"%s\"", l->name,
             c->owner);
    return -1;
  }
  if (c->group && lookup_id(c->group, 1, &gid)) {
    snprintf(err, errlen, "[listen %s] group: no such group \"%s\"", l->name,
             c->group);
    return -1;
  }
  if (clear_stale(l, &sa, uid, err, errlen))
    return -1;
  l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (l->fd < 0)
    return fail(err, errlen, l, "socket", errno);
  if (bind_private(l, c, uid, gid, err, errlen))
    return -1;
  if (listen(l->fd, BACKLOG) != 0)
    return fail(err, errlen, l, "listen", errno);
  return 0;
}

static int open_tcp(jrpcd_listener_t *l, const jrpcd_listen_conf_t *c,
                    char *err, size_t errlen) {
  struct sockaddr_storage ss;
  socklen_t sl;
  memset(&ss, 0, sizeof(ss));
  struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, c->host, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons(c->port);
    sl = sizeof(*s4);
  } else if (inet_pton(AF_INET6, c->host, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(c->port);
    sl = sizeof(*s6);
  } else {
    snprintf(err, errlen, "[listen %s] tcp: \"%s\" is not an IP address",
             l->name, c->host);
    return -1;
  }
  l->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (l->fd < 0)
    return fail(err, errlen, l, "socket", errno);
  int one = 1;
  setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (ss.ss_family == AF_INET6) /* [::] means IPv6 only; list 0.0.0.0 too */
    setsockopt(l->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (bind(l->fd, (struct sockaddr *)&ss, sl) != 0)
    return fail(err, errlen, l, "bind", errno);
  if (listen(l->fd, BACKLOG) != 0)
    return fail(err, errlen, l, "listen", errno);
  return 0;
}

/* What the section asks for, in the form the log uses. */
static void conf_desc(const jrpcd_listen_conf_t *c, char *out, size_t n) {
  if (c->kind == JRPCD_LISTEN_UNIX)
    snprintf(out, n, "unix:%s", c->path);
  else if (strchr(c->host, ':'))
    snprintf(out, n, "tcp:[%s]:%u", c->host, c->port);
  else
    snprintf(out, n, "tcp:%s:%u", c->host, c->port);
}

/* Each origin, then (after its NUL) the lines its replies carry; the
 * daemon stops at start-up when memory is short, so a NULL here is none. */
static char **origins_of(char *const *v) {
  size_t n = 0;
  while (v && v[n])
    n++;
  char **o = n ? calloc(n + 1, sizeof(*o)) : NULL;
  for (size_t i = 0; o && i < n; i++) {
    static const char fmt[] = "%s%cAccess-Control-Allow-Origin: %s\r\n"
                              "Vary: Origin\r\n";
    size_t len = 2 * strlen(v[i]) + sizeof(fmt) + 1;
    if ((o[i] = malloc(len)))
      snprintf(o[i], len, fmt, v[i], 0, v[i]);
    else
      return o; /* the ones so far */
  }
  return o;
}

static void origins_free(char **o) {
  for (size_t i = 0; o && o[i]; i++)
    free(o[i]);
  free(o);
}

static void init_common(jrpcd_listener_t *l, const jrpcd_listen_conf_t *c) {
  memset(l, 0, sizeof(*l));
  l->fd = -1;
  l->name = strdup(c->name);
  l->framing = c->framing;
  l->http_routes = (uint8_t)((c->health ? JRPC__HTTP_ROUTE_HEALTH : 0) |
                             (c->metrics ? JRPC__HTTP_ROUTE_METRICS : 0));
  l->websocket = (uint8_t)c->websocket;
  l->origins = origins_of(c->origins);
  l->stats = c->stats;
  l->tls = c->tls_cert != NULL;
  l->is_unix = c->kind == JRPCD_LISTEN_UNIX;
  conf_desc(c, l->desc, sizeof(l->desc));
}

int jrpcd_listener_open(jrpcd_listener_t *l, const jrpcd_listen_conf_t *c,
                        char *err, size_t errlen) {
  init_common(l, c);
  int rc =
      l->is_unix ? open_unix(l, c, err, errlen) : open_tcp(l, c, err, errlen);
  if (rc) /* path is set once our bind made the file: only then is it ours */
    jrpcd_listener_close(l);
  return rc;
}

/* A bound address in the log's form; abstract Unix names start with '@'. */
static void sock_desc(const struct sockaddr_storage *ss, socklen_t sl,
                      char *out, size_t n) {
  char host[INET6_ADDRSTRLEN];
  if (ss->ss_family == AF_UNIX) {
    const struct sockaddr_un *su = (const struct sockaddr_un *)ss;
    size_t len = sl > offsetof(struct sockaddr_un, sun_path)
                     ? sl - offsetof(struct sockaddr_un, sun_path)
                     : 0;
    if (len == 0)
      snprintf(out, n, "unix:(unnamed)");
    else if (su->sun_path[0] == '\0')
      snprintf(out, n, "unix:@%.*s", (int)len - 1, su->sun_path + 1);
    else
      snprintf(out, n, "unix:%.*s", (int)strnlen(su->sun_path, len),
               su->sun_path);
  } else if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
    inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
    snprintf(out, n, "tcp:%s:%u", host, ntohs(s4->sin_port));
  } else if (ss->ss_family == AF_INET6) {
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
    inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
    snprintf(out, n, "tcp:[%s]:%u", host, ntohs(s6->sin6_port));
  } else {
    snprintf(out, n, "address family %d", ss->ss_family);
  }
}

/* Whether the passed socket is at the address the section names: the same
 * path (or the same file under another name), the same IP and port. */
static int same_place(const jrpcd_listen_conf_t *c,
                      const struct sockaddr_storage *ss, const char *desc) {
  if (c->kind == JRPCD_LISTEN_UNIX) {
    if (strcmp(desc + 5, c->path) == 0)
      return 1;
    struct stat a, b;
    return desc[5] != '@' && stat(desc + 5, &a) == 0 &&
           stat(c->path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
  }
  unsigned char want[16];
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
    return inet_pton(AF_INET, c->host, want) == 1 &&
           memcmp(want, &s4->sin_addr, 4) == 0 &&
           ntohs(s4->sin_port) == c->port;
  }
  const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
  return inet_pton(AF_INET6, c->host, want) == 1 &&
         memcmp(want, &s6->sin6_addr, 16) == 0 &&
         ntohs(s6->sin6_port) == c->port;
}

int jrpcd_listener_adopt(jrpcd_listener_t *l, const jrpcd_listen_conf_t *c,
                         int fd, char *err, size_t errlen) {
  char want[160], got[160];
  conf_desc(c, want, sizeof(want));
  int type = 0, listening = 0;
  socklen_t len = sizeof(type);
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  memset(&ss, 0, sizeof(ss));
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
      getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
    snprintf(err, errlen,
             "[listen %s] fd %d from the service manager: %s (expected a "
             "listening socket for %s)",
             c->name, fd, strerror(errno), want);
    return -1;
  }
  sock_desc(&ss, sl, got, sizeof(got));
  int is_unix = ss.ss_family == AF_UNIX;
  int is_tcp = ss.ss_family == AF_INET || ss.ss_family == AF_INET6;
  if (type != SOCK_STREAM || (!is_unix && !is_tcp)) {
    snprintf(err, errlen,
             "[listen %s] fd %d from the service manager is not a stream "
             "socket (%s%s); the .socket unit needs ListenStream=",
             c->name, fd, got, type == SOCK_DGRAM ? ", datagram" : "");
    return -1;
  }
  if (is_unix != (c->kind == JRPCD_LISTEN_UNIX)) {
    snprintf(err, errlen,
             "[listen %s] is a %s listener (%s) but fd %d from the service "
             "manager is a %s socket (%s)",
             c->name, is_unix ? "tcp" : "unix", want, fd,
             is_unix ? "unix" : "tcp", got);
    return -1;
  }
  len = sizeof(listening);
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 ||
      !listening) {
    snprintf(err, errlen,
             "[listen %s] fd %d from the service manager (%s) is not "
             "listening; the .socket unit needs Accept=no",
             c->name, fd, got);
    return -1;
  }
  if (!same_place(c, &ss, got))
    jrpcd_warn("[listen %s] says %s, but the service manager passed fd %d "
               "bound to %s: serving that one",
               c->name, want, fd, got);
  init_common(l, c);
  snprintf(l->desc, sizeof(l->desc), "%s", got);
  l->fd = fd;
  l->passed = 1;
  return 0;
}

void jrpcd_listener_close(jrpcd_listener_t *l) {
  if (l->fd >= 0) {
    remove_ours(l);
    close(l->fd);
  }
  free(l->path);
  free(l->name);
  origins_free(l->origins);
  memset(l, 0, sizeof(*l));
  l->fd = -1;
}
