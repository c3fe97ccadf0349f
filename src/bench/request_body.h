// request_body.h: the JSON body of one benchmark request, byte for byte the keys and key order
// vLLM v0.10.2 sends (spec/vllm-bench.md section 3.2). Knows nothing of HTTP or timing.
#ifndef GB_BENCH_REQUEST_BODY_H
#define GB_BENCH_REQUEST_BODY_H

#include "bench/bench_types.h"
#include "bench/http_client.h"

// The compact JSON text for r under o's endpoint and sampling options. Free with cJSON_free.
char *request_body_build(const ClientOptions *o, const BenchRequest *r);

#endif
