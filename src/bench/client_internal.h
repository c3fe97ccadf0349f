// client_internal.h: what the client's own files share (http_client.c, client_probe.c) and the
// rest of the program must not call: curl's one-time global set-up, the request header list,
// the timeout in curl's unit.
#ifndef GB_BENCH_CLIENT_INTERNAL_H
#define GB_BENCH_CLIENT_INTERNAL_H

#include <curl/curl.h>
#include <stdint.h>

#include "bench/http_client.h"

// curl_global_init, once per process (thread-safe).
void client_global_init(void);

// Content-Type, Authorization, the extra headers, and an empty "Expect:" (no 100-continue
// round trip). Free with curl_slist_free_all.
struct curl_slist *client_headers(const ClientOptions *o);

// CURLOPT_TIMEOUT_MS for timeout_ns (rounded up; 0: none).
long client_timeout_ms(int64_t timeout_ns);

#endif
