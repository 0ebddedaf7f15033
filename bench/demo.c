/* demo.c - the library pipeline on standard input and output: reads
 * newline-framed JSON-RPC requests from stdin, answers on stdout, with the
 * sample math module loaded. Until the daemon exists this is how to talk to
 * jrpc by hand:
 *
 *   echo '{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}' \
 *     | build/run/bench/jrpc-demo
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dispatch.h"
#include "module.h"
#include "stream.h"

const jrpc_module_info_t *math_module_info(void);

static int flush(jrpc__stream_t *s) {
  const char *p[16];
  size_t n[16];
  size_t k;
  while ((k = jrpc__out_iov(&s->out, p, n, 16)) > 0) {
    for (size_t i = 0; i < k; i++) {
      size_t off = 0;
      while (off < n[i]) {
        ssize_t w = write(1, p[i] + off, n[i] - off);
        if (w < 0 && errno == EINTR)
          continue;
        if (w < 0)
          return -1;
        off += (size_t)w;
      }
      jrpc__out_consume(&s->out, n[i]);
    }
  }
  return 0;
}

int main(void) {
  jrpc__registry_t reg;
  jrpc__module_t math;
  jrpc__engine_t e;
  jrpc__stream_t s;
  char err[256];
  if (jrpc__registry_init(&reg) ||
      jrpc__module_start(&math, math_module_info(), "math", &reg, NULL, err,
                         sizeof(err))) {
    fprintf(stderr, "jrpc-demo: %s\n", err);
    return 1;
  }
  if (jrpc__engine_init(&e, &reg, NULL, jrpc__parser_new("jsmn"))) {
    fprintf(stderr, "jrpc-demo: cannot start the engine\n");
    return 1;
  }
  jrpc__stream_init(&s, &e, JRPC_FRAMING_NEWLINE);
  int rc = 0;
  for (;;) {
    size_t room;
    char *dst = jrpc__stream_rbuf(&s, &room);
    if (!dst) {
      fprintf(stderr, "jrpc-demo: out of memory\n");
      rc = 1;
      break;
    }
    ssize_t r = read(0, dst, room);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      perror("jrpc-demo: read");
      rc = 1;
      break;
    }
    int frc = jrpc__stream_feed(&s, (size_t)(r > 0 ? r : 0), r == 0);
    if (flush(&s) || frc || r == 0)
      break;
  }
  jrpc__stream_free(&s);
  jrpc__engine_free(&e);
  jrpc__module_stop(&math);
  jrpc__registry_free(&reg);
  return rc;
}
