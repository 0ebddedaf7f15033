// Peer server: libjson-rpc-cpp 0.7.0 as packaged by Debian 12
// (libjsonrpccpp-dev / libjsonrpccpp-server0 0.7.0-2.1, jsoncpp 1.9.5).
//
// Methods (params by position): add / math.add ([a, b] -> a + b),
// echo / echo.echo ([x] -> x). They are bound with the library's own
// AbstractServer<T>::bindAndAddMethod + Procedure API, so the library does
// request validation, dispatch and reply serialisation (Json::Reader /
// Json::FastWriter) in both modes below.
//
// Two connectors, chosen with --connector:
//
//   lib   (default) the library's own jsonrpc::UnixDomainSocketServer. This is
//         what a user of 0.7.0 gets. Only Unix sockets: Debian builds 0.7.0
//         without TCP_SOCKET_SERVER (upstream CMakeLists.txt:31 defaults it to
//         NO; no TcpSocketServer header in /usr/include/jsonrpccpp, no symbol
//         in libjsonrpccpp-server.so), so --tcp is refused in this mode.
//   lines our own small connector (LineConnector below, an
//         AbstractServerConnector subclass feeding AbstractServerConnector::
//         OnRequest): persistent connections, newline framing, pipelining,
//         thread per connection, one write() per batch of replies read in one
//         read(). Unix or TCP. It exists so the library's request handling can
//         be measured without its connector's accept polling and
//         one-request-per-connection limits; it is NOT part of the library.
//
// Behaviour of the library's UnixDomainSocketServer in 0.7.0, read from
// upstream tag v0.7.0,
// src/jsonrpccpp/server/connectors/unixdomainsocketserver.cpp (header:
// /usr/include/jsonrpccpp/server/connectors/unixdomainsocketserver.h), and
// checked against the Debian binary with objdump and by experiment:
//
//  * Framing: the delimiter is '\n' (DELIMITER_CHAR defaults to char(0x0A),
//    lines 26-28; `mov $0xa` in SendResponse in the .so). The per-connection
//    thread reads 1024-byte chunks until the accumulated data contains a
//    '\n' (GenerateResponse, lines 176-180), then passes the WHOLE
//    accumulated buffer to OnRequest. Json::Reader::parse there
//    (server/abstractprotocolhandler.cpp:40) parses the first JSON value and
//    ignores anything after it, so only the first request of a pipelined
//    burst is answered.
//  * Reply: FastWriter output, which already ends in '\n'; SendResponse
//    appends a '\n' only if none is present (lines 111-114).
//  * One request per connection: SendResponse close()s the connection right
//    after writing the reply (line 126). Any further requests on it are
//    dropped. On a Unix socket, closing with unread data queued sets
//    ECONNRESET on the peer, so a client that pipelined several requests
//    reads the first reply and then gets ECONNRESET rather than EOF.
//  * Accept loop: the listening socket is non-blocking (fcntl FNDELAY, line
//    54) and ListenLoop (lines 138-163) calls accept(); whenever accept fails
//    (no pending connection) it sleeps usleep(25000) = 25 ms (line 160;
//    `mov $0x61a8,%edi; call usleep` in the .so). listen() backlog is 5
//    (line 67). After a successful accept it loops straight back to accept(),
//    so it only sleeps when the queue is empty. A client doing one connection
//    per request, sequentially, therefore waits ~25 ms per request: ~40 req/s.
//    With C concurrent such clients throughput grows roughly as 40*C until
//    the queue is rarely empty (measured here, Python clients, 3 s each:
//    C=1 40, 2 79, 4 159, 8 344, 16 1075, 64 1282 req/s).
//  * Thread per connection: each accepted fd gets a new detached pthread
//    (lines 146-156). Handlers run concurrently.
//  * Robustness: if a client closes before sending '\n', read() returns 0 and
//    that thread spins forever on read() (lines 176-180: the return value is
//    never checked; seen here using ~75% of a core until the server exits);
//    read() returning -1 would make std::string::append(buf, (size_t)-1)
//    throw in a detached thread, terminating the process. StartListening
//    refuses to start if the socket path already exists (line 42), and
//    StopListening pthread_join()s the listener thread that LaunchLoop already
//    detached (lines 94, 132), so we do not call it: on SIGTERM/SIGINT we
//    unlink the socket and _exit(0).
//  * Measured with socat, one connection per request, sequential:
//    `for i in $(seq 100); do echo '{...}' | socat -t1 - UNIX-CONNECT:S; done`
//    takes 2.5 s (~39 req/s) against this server, so the 25 ms sleep
//    dominates; a pipelined burst of 1000 requests on one connection gets
//    one reply followed by ECONNRESET.
//
// Usage:
//   jsonrpccpp_server --unix PATH [--connector lib|lines]
//   jsonrpccpp_server --tcp PORT [--host ADDR] --connector lines
// Prints "listening" on stderr once ready.

#include <jsonrpccpp/server.h>
#include <jsonrpccpp/server/connectors/unixdomainsocketserver.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <string>

using jsonrpc::AbstractServer;
using jsonrpc::AbstractServerConnector;
using jsonrpc::Procedure;

namespace {

// ---------------------------------------------------------------------------
// Methods, bound through the library's procedure API.

class BenchServer : public AbstractServer<BenchServer> {
public:
  explicit BenchServer(AbstractServerConnector &conn)
      : AbstractServer<BenchServer>(conn, jsonrpc::JSONRPC_SERVER_V2) {
    // JSON_REAL validates with Json::Value::isDouble(), which in jsoncpp
    // 1.9 is true for any number, so integers and reals are both accepted.
    const char *adds[] = {"add", "math.add"};
    for (const char *name : adds)
      bindAndAddMethod(Procedure(name, jsonrpc::PARAMS_BY_POSITION,
                                 jsonrpc::JSON_REAL, "a", jsonrpc::JSON_REAL,
                                 "b", jsonrpc::JSON_REAL, NULL),
                       &BenchServer::Add);
    // No declared parameters: the library then accepts any params value.
    const char *echos[] = {"echo", "echo.echo"};
    for (const char *name : echos)
      bindAndAddMethod(Procedure(name, jsonrpc::PARAMS_BY_POSITION,
                                 jsonrpc::JSON_STRING, NULL),
                       &BenchServer::Echo);
  }

  void Add(const Json::Value &params, Json::Value &result) {
    const Json::Value &a = params[0u];
    const Json::Value &b = params[1u];
    if (a.isInt64() && b.isInt64())
      result = Json::Value(static_cast<Json::Int64>(a.asInt64() + b.asInt64()));
    else
      result = a.asDouble() + b.asDouble();
  }

  void Echo(const Json::Value &params, Json::Value &result) {
    if (params.isArray())
      result = params.size() > 0 ? params[0u] : Json::Value(Json::nullValue);
    else
      result = params;
  }
};

// ---------------------------------------------------------------------------
// LineConnector: persistent newline-delimited connections (not the library's).

class LineConnector : public AbstractServerConnector {
public:
  explicit LineConnector(int listen_fd) : listen_fd_(listen_fd) {}

  bool StartListening() override {
    pthread_t t;
    if (pthread_create(&t, NULL, &LineConnector::AcceptLoop, this) != 0)
      return false;
    pthread_detach(t);
    return true;
  }
  bool StopListening() override {
    return true;
  }

  // Called from OnRequest with the reply text; addInfo is the connection's
  // output buffer. Empty text means a notification: nothing to send.
  bool SendResponse(const std::string &response, void *addInfo) override {
    if (response.empty())
      return true;
    std::string *out = static_cast<std::string *>(addInfo);
    out->append(response);
    if (out->back() != '\n')
      out->push_back('\n');
    return true;
  }

private:
  struct Conn {
    LineConnector *self;
    int fd;
  };

  static void *AcceptLoop(void *p) {
    LineConnector *self = static_cast<LineConnector *>(p);
    for (;;) {
      int fd = accept(self->listen_fd_, NULL, NULL);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED)
          continue;
        if (errno == EMFILE || errno == ENFILE) {
          usleep(1000);
          continue;
        }
        perror("accept");
        return NULL;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
                 sizeof one); // fails harmlessly on Unix sockets
      Conn *c = new Conn{self, fd};
      pthread_t t;
      if (pthread_create(&t, NULL, &LineConnector::Serve, c) != 0) {
        close(fd);
        delete c;
        continue;
      }
      pthread_detach(t);
    }
  }

  static bool WriteAll(int fd, const char *p, size_t n) {
    while (n > 0) {
      ssize_t w = write(fd, p, n);
      if (w < 0) {
        if (errno == EINTR)
          continue;
        return false;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  static void *Serve(void *p) {
    Conn *c = static_cast<Conn *>(p);
    LineConnector *self = c->self;
    int fd = c->fd;
    delete c;
    std::string in, out;
    char buf[65536];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      in.append(buf, static_cast<size_t>(n));
      size_t start = 0, nl;
      while ((nl = in.find('\n', start)) != std::string::npos) {
        size_t end = nl;
        if (end > start && in[end - 1] == '\r')
          end--;
        if (end > start)
          self->OnRequest(in.substr(start, end - start), &out);
        start = nl + 1;
      }
      in.erase(0, start);
      if (!out.empty()) {
        if (!WriteAll(fd, out.data(), out.size()))
          break;
        out.clear();
      }
    }
    close(fd);
    return NULL;
  }

  int listen_fd_;
};

// ---------------------------------------------------------------------------

[[noreturn]] void Usage(const char *msg) {
  if (msg)
    fprintf(stderr, "jsonrpccpp_server: %s\n", msg);
  fprintf(
      stderr,
      "usage: jsonrpccpp_server --unix PATH [--connector lib|lines]\n"
      "       jsonrpccpp_server --tcp PORT [--host ADDR] --connector lines\n");
  exit(2);
}

// Remove a stale socket from an earlier run (the library refuses to start if
// the path exists); refuse to touch anything that is not a socket.
void RemoveStaleSocket(const std::string &path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0)
    return;
  if (!S_ISSOCK(st.st_mode)) {
    fprintf(stderr,
            "jsonrpccpp_server: refusing to remove %s: exists and is not a "
            "socket\n",
            path.c_str());
    exit(1);
  }
  unlink(path.c_str());
}

int ListenUnix(const std::string &path) {
  struct sockaddr_un sa;
  if (path.size() >= sizeof sa.sun_path)
    Usage("socket path too long");
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    perror("socket");
    exit(1);
  }
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  if (bind(fd, reinterpret_cast<struct sockaddr *>(&sa), sizeof sa) != 0) {
    perror("bind");
    exit(1);
  }
  if (listen(fd, 1024) != 0) {
    perror("listen");
    exit(1);
  }
  return fd;
}

int ListenTcp(const std::string &host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    perror("socket");
    exit(1);
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1)
    Usage("bad --host (IPv4 address)");
  if (bind(fd, reinterpret_cast<struct sockaddr *>(&sa), sizeof sa) != 0) {
    perror("bind");
    exit(1);
  }
  if (listen(fd, 1024) != 0) {
    perror("listen");
    exit(1);
  }
  return fd;
}

} // namespace

int main(int argc, char **argv) {
  std::string unix_path, host = "127.0.0.1", connector = "lib";
  int port = 0;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help")
      Usage(NULL);
    if (i + 1 >= argc)
      Usage((a + " needs a value (or is unknown)").c_str());
    std::string v = argv[++i];
    if (a == "--unix")
      unix_path = v;
    else if (a == "--tcp") {
      port = atoi(v.c_str());
      if (port <= 0 || port > 65535)
        Usage("bad TCP port");
    } else if (a == "--host")
      host = v;
    else if (a == "--connector")
      connector = v;
    else
      Usage(("unknown argument " + a).c_str());
  }
  if (unix_path.empty() == (port == 0))
    Usage("give exactly one of --unix or --tcp");
  if (connector != "lib" && connector != "lines")
    Usage("--connector must be lib or lines");
  if (connector == "lib" && port != 0)
    Usage("libjson-rpc-cpp 0.7.0 (Debian) has no TCP server connector; use "
          "--connector lines");

  // Writes to a client that went away must not kill the process; the
  // termination signals are taken synchronously by sigwait() below, so block
  // them before any thread exists (threads inherit the mask).
  signal(SIGPIPE, SIG_IGN);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);

  if (!unix_path.empty())
    RemoveStaleSocket(unix_path);

  AbstractServerConnector *conn;
  if (connector == "lib") {
    conn = new jsonrpc::UnixDomainSocketServer(unix_path);
  } else {
    int lfd = unix_path.empty() ? ListenTcp(host, port) : ListenUnix(unix_path);
    conn = new LineConnector(lfd);
  }
  BenchServer *server = new BenchServer(*conn);
  if (!server->StartListening()) {
    fprintf(stderr, "jsonrpccpp_server: StartListening failed\n");
    if (!unix_path.empty())
      unlink(unix_path.c_str());
    return 1;
  }
  fprintf(stderr, "listening\n");

  int sig = 0;
  while (sigwait(&stop, &sig) != 0) {
  }
  if (!unix_path.empty())
    unlink(unix_path.c_str());
  _exit(0);
}
