// api_json.h: the hand-written JSON pieces of the streamed answers (strings and numbers written
// straight into a Buf, no cJSON tree per token).
#ifndef GE_API_API_JSON_H
#define GE_API_API_JSON_H

#include <stddef.h>

#include "common/buf.h"

// s[0..n) as a JSON string, quotes included (valid UTF-8 passes through unescaped).
void api_json_string(Buf *out, const char *s, size_t n);

// A log-probability as OpenAI writes it: -inf (and NaN) become -9999.0, as vLLM clamps them.
void api_json_logprob(Buf *out, float logprob);

#endif
