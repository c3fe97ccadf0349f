// fuzz_harmony_parse.c: libFuzzer target for the harmony parser (harmony_parser_push in
// src/text/harmony.c), which reads a model's generated ids: the ids a server gets back are the
// model's choice, not ours. Input: token ids, 4 bytes each (fuzz_util.h). Content must stay valid
// UTF-8, the channel and recipient NUL-terminated in their arrays, and each event must match
// its id (a stop only for <|return|> or <|call|>).
#include <string.h>

#include "fuzz_util.h"
#include "text/harmony.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const Tokenizer *t = fuzz_tokenizer();
  TokenIds ids = {0};
  fuzz_ids_from_bytes(data, size, &ids);
  HarmonyParser p;
  harmony_parser_init(&p);
  Buf content = {0};
  for (size_t i = 0; i < ids.len; i++) {
    uint32_t id = ids.data[i];
    size_t before = content.len;
    HarmonyEventKind ev = harmony_parser_push(&p, t, id, &content);
    fuzz_require(ev != HARMONY_EVENT_STOP || id == TOK_RETURN || id == TOK_CALL,
                 "a stop comes from <|return|> or <|call|>");
    fuzz_require(ev != HARMONY_EVENT_MESSAGE_END || id == TOK_END, "a message end is <|end|>");
    fuzz_require(ev == HARMONY_EVENT_CONTENT || ev == HARMONY_EVENT_MESSAGE_END ||
                     ev == HARMONY_EVENT_STOP || content.len == before,
                 "content grows only with a content or end event");
    fuzz_require(memchr(p.channel, '\0', sizeof p.channel) != NULL, "channel is terminated");
    fuzz_require(memchr(p.recipient, '\0', sizeof p.recipient) != NULL, "recipient is terminated");
  }
  fuzz_require(fuzz_valid_utf8(content.data, content.len), "content is valid UTF-8");
  harmony_parser_free(&p);
  buf_free(&content);
  token_ids_free(&ids);
  return 0;
}
