// fuzz_api_completions.c: libFuzzer target for the engine's /v1/completions request bodies
// (api_request_parse with chat off: fields, prompt as text, token ids or a list of one of those).
// The checks are fuzz_api.h's.
#include "fuzz_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_api_body(data, size, false);
  return 0;
}
