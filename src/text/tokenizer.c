// tokenizer.c: encoding and decoding for o200k_base / o200k_harmony. Owns the split regex and
// the special-token tables; the BPE of each piece is bpe.c's, the rank table vocab.c's.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/tokenizer.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/file.h"
#include "text/bpe.h"

// o200k_base's pre-tokenizer (tiktoken), alternatives in order. tiktoken's \s is Unicode
// White_Space; PCRE2's \s under UCP lacks U+0085, so whitespace is spelled out as WS.
#define WS "\\t-\\r\\x{20}\\x{85}\\p{Z}"
#define UPPER "\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}"
#define LOWER "\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}"
#define CONTRACTION "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
static const char SPLIT_PATTERN[] =
    "[^\\r\\n\\p{L}\\p{N}]?[" UPPER "]*[" LOWER "]+" CONTRACTION
    "|[^\\r\\n\\p{L}\\p{N}]?[" UPPER "]+[" LOWER "]*" CONTRACTION
    "|\\p{N}{1,3}"
    "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n/]*"
    "|[" WS "]*[\\r\\n]+"
    "|[" WS "]+(?![^" WS "])"
    "|[" WS "]+";

const char *tok_default_vocab_path(void) {
  static char path[4096];
  const char *env = getenv("GPTOSS_TOKENIZER_FILE");
  if (env && *env) return env;
  char dir[3000];
  if (file_exe_dir(dir, sizeof dir)) {  // <root>/build[/...]/bin/<exe>: look in the parents
    Buf up = {0};
    for (int level = 1; level <= 4; level++) {
      buf_append_str(&up, "/..");
      snprintf(path, sizeof path, "%s%s/datasets/tokenizer/o200k_base.tiktoken", dir, up.data);
      if (access(path, R_OK) == 0) {
        buf_free(&up);
        return path;
      }
    }
    buf_free(&up);
  }
  return "datasets/tokenizer/o200k_base.tiktoken";
}

bool tok_encoding_from_name(const char *name, TokEncoding *out) {
  if (strcmp(name, "o200k_base") == 0) *out = TOK_O200K_BASE;
  else if (strcmp(name, "o200k_harmony") == 0) *out = TOK_O200K_HARMONY;
  else return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// special tokens

static const char *harmony_special_name(uint32_t id) {
  switch (id) {
    case TOK_STARTOFTEXT: return "<|startoftext|>";
    case TOK_ENDOFTEXT: return "<|endoftext|>";
    case TOK_RETURN: return "<|return|>";
    case TOK_CONSTRAIN: return "<|constrain|>";
    case TOK_CHANNEL: return "<|channel|>";
    case TOK_START: return "<|start|>";
    case TOK_END: return "<|end|>";
    case TOK_MESSAGE: return "<|message|>";
    case TOK_CALL: return "<|call|>";
    default: return NULL;  // <|reserved_N|>
  }
}

static const Tokenizer *sort_ctx;
static int cmp_by_name(const void *a, const void *b) {
  return strcmp(sort_ctx->specials[*(const uint32_t *)a].name,
                sort_ctx->specials[*(const uint32_t *)b].name);
}

static void specials_build(Tokenizer *t) {
  static const SpecialToken base[] = {{199999, "<|endoftext|>"}, {200018, "<|endofprompt|>"}};
  if (t->encoding == TOK_O200K_BASE) {
    t->num_specials = 2;
    t->specials = xmalloc(sizeof base);
    memcpy(t->specials, base, sizeof base);
  } else {
    uint32_t first = t->vocab.num_ranks, last = TOK_HARMONY_VOCAB_SIZE;
    t->num_specials = last - first;
    t->specials = xmalloc(t->num_specials * sizeof *t->specials);
    t->special_names = xmalloc(t->num_specials * 24);
    for (uint32_t id = first; id < last; id++) {
      char *name = t->special_names + (id - first) * 24;
      const char *known = harmony_special_name(id);
      if (known) snprintf(name, 24, "%s", known);
      else snprintf(name, 24, "<|reserved_%u|>", id);
      t->specials[id - first] = (SpecialToken){id, name};
    }
  }
  t->vocab_size = t->specials[t->num_specials - 1].id + 1;
  t->by_name = xmalloc(t->num_specials * sizeof *t->by_name);
  for (uint32_t i = 0; i < t->num_specials; i++) t->by_name[i] = i;
  sort_ctx = t;  // tok_init runs before the tokenizer is shared, so this is single-threaded
  qsort(t->by_name, t->num_specials, sizeof *t->by_name, cmp_by_name);
}

int32_t tok_special_id(const Tokenizer *t, const char *name, size_t name_len) {
  size_t lo = 0, hi = t->num_specials;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const char *cand = t->specials[t->by_name[mid]].name;
    int c = strncmp(cand, name, name_len);
    if (c == 0 && cand[name_len] != '\0') c = 1;
    if (c == 0) return (int32_t)t->specials[t->by_name[mid]].id;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

static const SpecialToken *special_by_id(const Tokenizer *t, uint32_t id) {
  size_t lo = 0, hi = t->num_specials;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (t->specials[mid].id == id) return &t->specials[mid];
    if (t->specials[mid].id < id) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

bool tok_is_special(const Tokenizer *t, uint32_t id) { return special_by_id(t, id) != NULL; }

// ---------------------------------------------------------------------------------------------
// init / free

bool tok_init(Tokenizer *t, TokEncoding encoding, const char *vocab_path, char *err,
              size_t err_size) {
  *t = (Tokenizer){.encoding = encoding};
  if (!vocab_path) vocab_path = tok_default_vocab_path();
  if (!vocab_load(&t->vocab, vocab_path, VOCAB_O200K_BASE_SHA256, err, err_size)) return false;
  int code;
  PCRE2_SIZE offset;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)SPLIT_PATTERN, PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &offset,
                                 NULL);
  CHECK(re != NULL);  // the pattern is a constant: failure is a bug, not an input error
  CHECK(pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0);
  t->split_regex = re;
  specials_build(t);
  return true;
}

void tok_free(Tokenizer *t) {
  vocab_free(&t->vocab);
  pcre2_code_free(t->split_regex);
  free(t->specials);
  free(t->by_name);
  free(t->special_names);
  *t = (Tokenizer){0};
}

// ---------------------------------------------------------------------------------------------
// encode

// Ordinary text: split with the regex, BPE each piece. Bytes no alternative matches (only
// invalid UTF-8 can be such) form pieces of their own, so every byte is kept.
static void encode_ordinary(const Tokenizer *t, const uint8_t *text, size_t n, pcre2_match_data *md,
                            BpeScratch *scratch, TokenIds *out) {
  size_t pos = 0;
  while (pos < n) {
    int rc = pcre2_jit_match(t->split_regex, text, n, pos, 0, md, NULL);
    size_t start = n, end = n;
    if (rc > 0) {
      PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
      start = ov[0];
      end = ov[1];
    }
    if (start > pos) bpe_encode_piece(&t->vocab, text + pos, start - pos, scratch, out);
    if (end > start) bpe_encode_piece(&t->vocab, text + start, end - start, scratch, out);
    CHECK(end > pos || rc <= 0);  // no alternative matches the empty string
    pos = end;
  }
}

// Finds the next special token in text[from..n): returns its start and sets *id and *len.
static size_t find_special(const Tokenizer *t, const uint8_t *text, size_t n, size_t from,
                           uint32_t *id, size_t *len) {
  for (size_t pos = from; pos + 4 <= n;) {
    const uint8_t *open = memmem(text + pos, n - pos, "<|", 2);
    if (!open) break;
    size_t at = (size_t)(open - text);
    size_t limit = n - at < 32 ? n - at : 32;  // names are at most 23 bytes
    const uint8_t *close = memmem(open + 2, limit - 2, "|>", 2);
    if (close) {
      size_t name_len = (size_t)(close + 2 - open);
      int32_t sid = tok_special_id(t, (const char *)open, name_len);
      if (sid >= 0) {
        *id = (uint32_t)sid;
        *len = name_len;
        return at;
      }
    }
    pos = at + 1;
  }
  return n;
}

void tok_encode(const Tokenizer *t, const char *text, size_t n, bool allow_special, TokenIds *out) {
  const uint8_t *bytes = (const uint8_t *)text;
  pcre2_match_data *md = pcre2_match_data_create(1, NULL);
  CHECK(md != NULL);
  BpeScratch scratch = {0};
  size_t pos = 0;
  while (pos < n) {
    uint32_t id = 0;
    size_t len = 0;
    size_t at = allow_special ? find_special(t, bytes, n, pos, &id, &len) : n;
    encode_ordinary(t, bytes + pos, at - pos, md, &scratch, out);
    if (at == n) break;
    token_ids_push(out, id);
    pos = at + len;
  }
  bpe_scratch_free(&scratch);
  pcre2_match_data_free(md);
}

// ---------------------------------------------------------------------------------------------
// decode

const uint8_t *tok_id_bytes(const Tokenizer *t, uint32_t id, size_t *len) {
  if (id < t->vocab.num_ranks) return vocab_token_bytes(&t->vocab, id, len);
  const SpecialToken *s = special_by_id(t, id);
  if (!s) return NULL;
  *len = strlen(s->name);
  return (const uint8_t *)s->name;
}

long tok_decode(const Tokenizer *t, const uint32_t *ids, size_t n, Buf *out) {
  long first_unknown = -1;
  for (size_t i = 0; i < n; i++) {
    size_t len;
    const uint8_t *bytes = tok_id_bytes(t, ids[i], &len);
    if (bytes) buf_append(out, bytes, len);
    else if (first_unknown < 0) first_unknown = (long)i;
  }
  if (!out->data) buf_append(out, "", 0);
  return first_unknown;
}
