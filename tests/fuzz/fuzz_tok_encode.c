// fuzz_tok_encode.c: libFuzzer target for tok_encode (src/text/tokenizer.c: the split regex, the
// BPE of bpe.c, special-token search) on o200k_harmony. Input: one flags byte (bit 0: allow
// special tokens), then the text. Any bytes must round-trip (decode(encode(text)) == text), and
// with specials not allowed no special id may come out.
#include <string.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const Tokenizer *t = fuzz_tokenizer();
  bool allow_special = data[0] & 1;
  const char *text = (const char *)data + 1;
  size_t n = size - 1;
  TokenIds ids = {0};
  tok_encode(t, text, n, allow_special, &ids);
  for (size_t i = 0; i < ids.len; i++) {
    fuzz_require(ids.data[i] < t->vocab_size, "ids are inside the vocabulary");
    fuzz_require(allow_special || !tok_is_special(t, ids.data[i]),
                 "no special id unless specials are allowed");
  }
  Buf back = {0};
  fuzz_require(tok_decode(t, ids.data, ids.len, &back) == -1, "every id decodes");
  fuzz_require(back.len == n && memcmp(back.data, text, n) == 0, "decode(encode(text)) == text");
  buf_free(&back);
  token_ids_free(&ids);
  return 0;
}
