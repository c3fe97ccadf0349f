// output_script.h: feeds harmony text, as the model would generate it, through an ApiOutput one
// token event at a time (the last carrying finish), for the tests of what answers are written
// from model output. Included by one test file each (static), after cmocka.h.
#ifndef GE_TESTS_OUTPUT_SCRIPT_H
#define GE_TESTS_OUTPUT_SCRIPT_H

#include <string.h>

#include "api/api_output.h"

// Appends the answer's bytes to out; every event must answer 200.
static void output_script_run(const Tokenizer *t, const ApiOutputInfo *info, const char *output,
                              FinishReason finish, Buf *out) {
  ApiOutput o;
  api_output_init(&o, info);
  TokenIds ids = {0};
  tok_encode(t, output, strlen(output), true, &ids);
  for (size_t i = 0; i < ids.len; i++) {
    TokenEvent ev = {.request_id = info->request_id,
                     .has_token = true,
                     .token_id = ids.data[i],
                     .finish = i + 1 == ids.len ? finish : FINISH_NONE,
                     .num_prompt_tokens = 10,
                     .num_output_tokens = (uint32_t)i + 1};
    assert_int_equal(api_output_event(&o, &ev, out), 200);
  }
  token_ids_free(&ids);
  api_output_free(&o);
}

#endif
