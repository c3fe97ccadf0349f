// fuzz_tok_decode.c: libFuzzer target for decoding (tok_decode in src/text/tokenizer.c and the
// streaming decoder of src/text/stream_decoder.c). Input: token ids, 4 bytes each (fuzz_util.h),
// some of them unknown. The streamed text must be valid UTF-8, equal stream_decoder_decode_all,
// and equal the plain decode whenever that is valid UTF-8.
#include <string.h>

#include "fuzz_util.h"
#include "text/stream_decoder.h"

static bool same(const Buf *a, const Buf *b) {
  return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const Tokenizer *t = fuzz_tokenizer();
  TokenIds ids = {0};
  fuzz_ids_from_bytes(data, size, &ids);
  Buf plain = {0}, streamed = {0}, all = {0};
  long first_unknown = tok_decode(t, ids.data, ids.len, &plain);
  StreamDecoder d = {0};
  size_t num_unknown = 0;
  for (size_t i = 0; i < ids.len; i++) {
    bool known = stream_decoder_push(&d, t, ids.data[i], &streamed);
    fuzz_require(known == (ids.data[i] < t->vocab_size), "push refuses exactly the unknown ids");
    fuzz_require(known || first_unknown >= 0, "tok_decode reports an unknown id");
    if (!known && num_unknown++ == 0)
      fuzz_require(first_unknown == (long)i, "tok_decode names the first unknown id");
    fuzz_require(d.num_pending >= 0 && d.num_pending <= 3, "at most 3 bytes pending");
  }
  stream_decoder_flush(&d, &streamed);
  stream_decoder_decode_all(t, ids.data, ids.len, &all);
  fuzz_require(fuzz_valid_utf8(streamed.data, streamed.len), "streamed text is valid UTF-8");
  fuzz_require(same(&streamed, &all), "pushes + flush == decode_all");
  if (fuzz_valid_utf8(plain.data, plain.len))
    fuzz_require(same(&streamed, &plain), "streamed == decoded when the decode is valid UTF-8");
  buf_free(&plain);
  buf_free(&streamed);
  buf_free(&all);
  token_ids_free(&ids);
  return 0;
}
