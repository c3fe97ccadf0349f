// prose.c: gathers prose paragraphs from text files (see prose.h). A paragraph ends at a blank
// line, at a Debian " ." line, or at an unindented "Field: value" line (which is dropped); its
// lines are joined with single spaces and it is kept when it reads as prose (is_prose) and was not
// seen before.
#include "bench/prose.h"

#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/check.h"
#include "common/file.h"
#include "text/utf8.h"

// A set of 64-bit paragraph hashes (open addressing; 0 marks an empty slot).
typedef struct {
  uint64_t *slots;  // [cap]
  size_t cap;
  size_t num;
} HashSet;

// Adds h; false when it was already there.
static bool hashset_add(HashSet *s, uint64_t h) {
  if (h == 0) h = 1;
  if (2 * (s->num + 1) > s->cap) {
    HashSet grown = {xcalloc(s->cap ? 2 * s->cap : 1024, sizeof(uint64_t)),
                     s->cap ? 2 * s->cap : 1024, 0};
    for (size_t i = 0; i < s->cap; i++)
      if (s->slots[i]) hashset_add(&grown, s->slots[i]);
    free(s->slots);
    *s = grown;
  }
  size_t i = h & (s->cap - 1);
  while (s->slots[i] && s->slots[i] != h) i = (i + 1) & (s->cap - 1);
  if (s->slots[i]) return false;
  s->slots[i] = h;
  s->num++;
  return true;
}

static uint64_t fnv1a(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
  return h;
}

// Prose: at least 160 bytes and 24 words of 9 letters or fewer on average, mostly letters and
// spaces, few digits, mostly lower case (not a shouted disclaimer), at least one full stop, and
// none of the characters that mark addresses, markup or code.
static bool is_prose(const char *s, size_t n) {
  if (n < 160 || memmem(s, n, "://", 3)) return false;
  size_t letters = 0, upper = 0, spaces = 0, digits = 0, stops = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c && strchr("@<>{}[]|\\*=#_~^$`", c)) return false;
    if (((c | 32) >= 'a' && (c | 32) <= 'z') || c >= 0x80) letters++;
    if (c >= 'A' && c <= 'Z') upper++;
    if (c == ' ') spaces++;
    if (c >= '0' && c <= '9') digits++;
    if (c == '.' && (i + 1 == n || s[i + 1] == ' ')) stops++;
  }
  return spaces >= 23 && stops >= 1 && 100 * (letters + spaces) >= 88 * n &&
         100 * digits <= 2 * n && 5 * upper <= letters && letters <= 9 * (spaces + 1);
}

// "Field: value" at the start of a line (Debian copyright headers, mail headers).
static bool is_field_line(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && i < 24 && (((s[i] | 32) >= 'a' && (s[i] | 32) <= 'z') || s[i] == '-')) i++;
  return i > 0 && i < n && s[i] == ':' && (i + 1 == n || s[i + 1] == ' ');
}

static bool is_valid_text(const char *s, size_t n) {
  if (memchr(s, '\0', n)) return false;
  for (size_t i = 0; i < n;) {
    int k = utf8_next((const uint8_t *)s + i, n - i);
    if (k <= 0) return false;
    i += (size_t)k;
  }
  return true;
}

static void keep_paragraph(ProseCorpus *c, HashSet *seen, Buf *par) {
  if (is_prose(par->data, par->len) && hashset_add(seen, fnv1a(par->data, par->len))) {
    if (c->text.len) buf_append_str(&c->text, "\n\n");
    buf_append(&c->text, par->data, par->len);
    c->num_paragraphs++;
  }
  buf_clear(par);
}

static void add_file_text(ProseCorpus *c, HashSet *seen, const char *s, size_t n) {
  Buf par = {0};
  for (size_t pos = 0; pos < n;) {
    const char *nl = memchr(s + pos, '\n', n - pos);
    size_t end = nl ? (size_t)(nl - s) : n, start = pos;
    pos = end + 1;
    bool indented = start < end && (s[start] == ' ' || s[start] == '\t');
    while (start < end && (s[start] == ' ' || s[start] == '\t')) start++;
    while (end > start && (s[end - 1] == ' ' || s[end - 1] == '\t' || s[end - 1] == '\r')) end--;
    size_t len = end - start;
    bool field = !indented && is_field_line(s + start, len);
    if (len == 0 || (len == 1 && s[start] == '.') || field) {
      if (par.len) keep_paragraph(c, seen, &par);
      continue;
    }
    if (par.len) buf_append_byte(&par, ' ');
    buf_append(&par, s + start, len);
  }
  if (par.len) keep_paragraph(c, seen, &par);
  buf_free(&par);
}

static void add_path(ProseCorpus *c, HashSet *seen, const char *path, bool expand_dirs) {
  struct stat st;
  if (stat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode) && expand_dirs) {
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s/*", path);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; i++) add_path(c, seen, g.gl_pathv[i], false);
    globfree(&g);
    return;
  }
  if (!S_ISREG(st.st_mode)) return;
  Buf file = {0};
  char ignored[256];
  if (file_read_all(path, &file, ignored, sizeof ignored) && is_valid_text(file.data, file.len)) {
    add_file_text(c, seen, file.data, file.len);
    c->num_files++;
  }
  buf_free(&file);
}

bool prose_load(ProseCorpus *c, const char *const *patterns, size_t num_patterns,
                size_t min_bytes, char *err, size_t err_size) {
  *c = (ProseCorpus){0};
  HashSet seen = {0};
  for (size_t p = 0; p < num_patterns; p++) {
    glob_t g;
    if (glob(patterns[p], 0, NULL, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; i++) add_path(c, &seen, g.gl_pathv[i], true);
    globfree(&g);
  }
  free(seen.slots);
  if (c->text.len >= min_bytes) return true;
  snprintf(err, err_size,
           "found only %zu bytes of prose (need %zu) in %zu readable text files matched by the "
           "--source patterns; pass --source with more English text (a directory or a pattern "
           "such as '/usr/share/doc/*/copyright')",
           c->text.len, min_bytes, c->num_files);
  prose_free(c);
  return false;
}

void prose_free(ProseCorpus *c) {
  buf_free(&c->text);
  *c = (ProseCorpus){0};
}
