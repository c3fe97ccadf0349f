// tokenizer.h: o200k_base and o200k_harmony, identical to OpenAI's tiktoken: the o200k
// pre-tokenizer regex (PCRE2 with JIT), byte-level BPE by rank, and the encodings' special tokens.
// A Tokenizer is read-only after tok_init, so many threads may encode and decode with one.
#ifndef GB_TEXT_TOKENIZER_H
#define GB_TEXT_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "text/token_ids.h"
#include "text/vocab.h"

typedef enum {
  TOK_O200K_BASE,     // 199,998 ranks + <|endoftext|> 199999, <|endofprompt|> 200018
  TOK_O200K_HARMONY,  // 199,998 ranks + 1,090 specials 199998..201087 (GPT-OSS)
} TokEncoding;

// o200k_harmony's named special tokens (GPT-OSS; spec gptoss-model.md section 6).
enum {
  TOK_STARTOFTEXT = 199998,
  TOK_ENDOFTEXT = 199999,
  TOK_RETURN = 200002,
  TOK_CONSTRAIN = 200003,
  TOK_CHANNEL = 200005,
  TOK_START = 200006,
  TOK_END = 200007,
  TOK_MESSAGE = 200008,
  TOK_CALL = 200012,
  TOK_HARMONY_VOCAB_SIZE = 201088,
};

typedef struct {
  uint32_t id;
  const char *name;  // "<|start|>"
} SpecialToken;

typedef struct Tokenizer {
  TokEncoding encoding;
  Vocab vocab;
  void *split_regex;        // pcre2_code_8 *, JIT-compiled
  SpecialToken *specials;   // [num_specials] sorted by id
  uint32_t *by_name;        // [num_specials] indices into specials, sorted by name
  size_t num_specials;
  char *special_names;      // storage behind specials[].name
  uint32_t vocab_size;      // one past the largest id
} Tokenizer;

// The vocabulary file: $GPTOSS_TOKENIZER_FILE, else datasets/tokenizer/o200k_base.tiktoken in
// the project that holds the executable (searched up to 4 folders above it), else relative to
// the current directory.
const char *tok_default_vocab_path(void);

// Loads vocab_path (NULL = the default), verifies its sha256, compiles the regex.
// Returns false with a message that names the file and the fix.
bool tok_init(Tokenizer *t, TokEncoding encoding, const char *vocab_path, char *err,
              size_t err_size);
void tok_free(Tokenizer *t);

// "o200k_base" / "o200k_harmony" -> encoding; false for any other name.
bool tok_encoding_from_name(const char *name, TokEncoding *out);

// Appends the ids of text[0..n) to out. Any bytes are accepted: invalid UTF-8 is encoded byte by
// byte and decodes back to the same bytes. With allow_special, special-token text such as
// "<|start|>" becomes its id; otherwise it is ordinary text (the safe default for user content).
void tok_encode(const Tokenizer *t, const char *text, size_t n, bool allow_special, TokenIds *out);

// Appends the bytes of ids to out (specials as their names). Returns the index of the first
// unknown id, or -1 when all are known (unknown ids append nothing).
long tok_decode(const Tokenizer *t, const uint32_t *ids, size_t n, Buf *out);

// Bytes of one id (a special's name for specials); NULL for an unknown id.
const uint8_t *tok_id_bytes(const Tokenizer *t, uint32_t id, size_t *len);

// Id of a special token by name ("<|call|>"), or -1.
int32_t tok_special_id(const Tokenizer *t, const char *name, size_t name_len);

// True when id is one of the encoding's special tokens.
bool tok_is_special(const Tokenizer *t, uint32_t id);

#endif
