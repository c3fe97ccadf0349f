// fuzz_api_chat.c: libFuzzer target for the engine's /v1/chat/completions request bodies
// (api_request_parse with chat on: fields, messages, reasoning_effort, and the harmony rendering
// of api_chat.c). The checks are fuzz_api.h's.
#include "fuzz_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_api_body(data, size, true);
  return 0;
}
