/* metrics.h - what GET /health and GET /metrics answer on an http
 * listener (lib/http.c asks through jrpcd_http_host, its arg the
 * connection that asks). */
#ifndef JRPCD_METRICS_H
#define JRPCD_METRICS_H

#include "http.h"

extern const jrpc__http_host_t jrpcd_http_host;

#endif
