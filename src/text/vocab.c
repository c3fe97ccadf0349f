// vocab.c: .tiktoken parsing (lines "base64(token bytes) rank"), sha256 verification (OpenSSL
// libcrypto) and the bytes -> rank hash table used by every BPE merge step.
#include "text/vocab.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/file.h"

// ---------------------------------------------------------------------------------------------
// hashing: 8 bytes at a time, multiply-xorshift mixing (keys are short: 1..128 bytes)

static uint64_t hash_bytes(const uint8_t *s, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0xff51afd7ed558ccdull);
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    s += 8;
    n -= 8;
  }
  uint64_t tail = 0;
  memcpy(&tail, s, n);
  h = (h ^ tail) * 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 32;
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 29);
}

int32_t vocab_rank(const Vocab *v, const uint8_t *s, size_t n) {
  uint64_t h = hash_bytes(s, n);
  uint32_t tag = (uint32_t)(h >> 32);
  for (uint32_t i = (uint32_t)h & v->table_mask;; i = (i + 1) & v->table_mask) {
    uint64_t e = v->table[i];
    if (!e) return -1;
    if ((uint32_t)(e >> 32) != tag) continue;
    uint32_t rank = (uint32_t)e - 1;
    size_t len;
    const uint8_t *tok = vocab_token_bytes(v, rank, &len);
    if (len == n && memcmp(tok, s, n) == 0) return (int32_t)rank;
  }
}

static void table_build(Vocab *v) {
  uint32_t size = 1;
  while (size < 2 * v->num_ranks) size *= 2;
  v->table = xcalloc(size, sizeof *v->table);
  v->table_mask = size - 1;
  for (uint32_t r = 0; r < v->num_ranks; r++) {
    size_t len;
    const uint8_t *tok = vocab_token_bytes(v, r, &len);
    uint64_t h = hash_bytes(tok, len);
    uint32_t i = (uint32_t)h & v->table_mask;
    while (v->table[i]) i = (i + 1) & v->table_mask;
    v->table[i] = (h >> 32 << 32) | (uint64_t)(r + 1);
  }
}

// ---------------------------------------------------------------------------------------------
// parsing

static int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Decodes standard padded base64 s[0..n) into out; false on any malformed input.
static bool base64_decode(const char *s, size_t n, Buf *out) {
  if (n == 0 || n % 4) return false;
  for (size_t i = 0; i < n; i += 4) {
    int v[4];
    int num_pad = 0;
    for (int k = 0; k < 4; k++) {
      if (s[i + k] == '=' && i + 4 == n && k >= 2) {
        v[k] = 0;
        num_pad++;
      } else if (num_pad || (v[k] = base64_value(s[i + k])) < 0) {
        return false;
      }
    }
    uint32_t w = (uint32_t)(v[0] << 18 | v[1] << 12 | v[2] << 6 | v[3]);
    uint8_t b[3] = {(uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w};
    buf_append(out, b, (size_t)(3 - num_pad));
  }
  return true;
}

static void sha256_hex(const void *data, size_t n, char hex[65]) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  CHECK(EVP_Digest(data, n, digest, &len, EVP_sha256(), NULL) == 1 && len == 32);
  for (unsigned i = 0; i < len; i++) sprintf(hex + 2 * i, "%02x", digest[i]);
}

static bool parse_lines(Vocab *v, const char *path, const Buf *text, char *err, size_t err_size) {
  Buf bytes = {0};
  size_t cap = 1 << 18;
  v->offsets = xmalloc(cap * sizeof *v->offsets);
  v->offsets[0] = 0;
  size_t line_no = 0;
  for (const char *p = text->data, *end = p + text->len; p < end; line_no++) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    const char *space = memchr(p, ' ', (size_t)(eol - p));
    char *rank_end = NULL;
    long rank = space ? strtol(space + 1, &rank_end, 10) : -1;
    if (!space || rank_end != eol || !base64_decode(p, (size_t)(space - p), &bytes)) {
      snprintf(err, err_size, "%s:%zu: expected \"<base64 token bytes> <rank>\"", path, line_no + 1);
      buf_free(&bytes);
      return false;
    }
    if (rank != (long)line_no) {
      snprintf(err, err_size, "%s:%zu: rank %ld out of order (expected %zu)", path, line_no + 1,
               rank, line_no);
      buf_free(&bytes);
      return false;
    }
    if (line_no + 2 > cap) v->offsets = xrealloc(v->offsets, (cap *= 2) * sizeof *v->offsets);
    v->offsets[line_no + 1] = (uint32_t)bytes.len;
    p = eol + 1;
  }
  v->num_ranks = (uint32_t)line_no;
  v->bytes = (uint8_t *)bytes.data;
  return true;
}

bool vocab_load(Vocab *v, const char *path, const char *expected_sha256, char *err,
                size_t err_size) {
  *v = (Vocab){0};
  Buf text = {0};
  if (!file_read_all(path, &text, err, err_size)) {
    buf_free(&text);
    return false;
  }
  if (expected_sha256) {
    char hex[65];
    sha256_hex(text.data, text.len, hex);
    if (strcmp(hex, expected_sha256) != 0) {
      snprintf(err, err_size,
               "%s: sha256 %s does not match o200k_base's %s; the file is corrupt or another "
               "vocabulary: restore datasets/tokenizer/o200k_base.tiktoken from git",
               path, hex, expected_sha256);
      buf_free(&text);
      return false;
    }
  }
  bool ok = parse_lines(v, path, &text, err, err_size);
  buf_free(&text);
  if (!ok) {
    vocab_free(v);
    return false;
  }
  table_build(v);
  return true;
}

void vocab_free(Vocab *v) {
  free(v->bytes);
  free(v->offsets);
  free(v->table);
  *v = (Vocab){0};
}
