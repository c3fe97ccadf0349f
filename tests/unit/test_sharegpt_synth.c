// test_sharegpt_synth.c: prose gathering (Debian copyright layout, duplicates, non-prose) from
// tests/fixtures/bench/prose/, and synthetic ShareGPT conversations cut from it: layout, ids,
// cuts at word ends inside real text, determinism, and the loader's "sharegpt-synth" label.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/dataset.h"
#include "bench/prose.h"
#include "bench/sharegpt_synth.h"

#define PROSE_DIR "tests/fixtures/bench/prose"

typedef struct {
  Tokenizer tok;
  ProseCorpus corpus;
} Fixture;

static int setup(void **state) {
  Fixture *f = calloc(1, sizeof *f);
  char err[1024];
  const char *sources[] = {PROSE_DIR};
  if (!tok_init(&f->tok, TOK_O200K_HARMONY, NULL, err, sizeof err) ||
      !prose_load(&f->corpus, sources, 1, 1000, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  Fixture *f = *state;
  prose_free(&f->corpus);
  tok_free(&f->tok);
  free(f);
  return 0;
}

// copyright: its two licence paragraphs (the " ." line splits them; the Field: lines go).
// notes.txt: three paragraphs; its repeat of the first, "Thanks.", the one with an address and
// the shouted disclaimer are dropped.
static void test_prose_keeps_distinct_prose_paragraphs(void **state) {
  const ProseCorpus *c = &((Fixture *)*state)->corpus;
  assert_int_equal(c->num_files, 2);
  assert_int_equal(c->num_paragraphs, 5);
  const char *text = c->text.data;
  // Files in sorted order: copyright first; its indented lines joined into one line.
  assert_ptr_equal(strstr(text, "Permission is granted to anyone to use this example for any "
                                "purpose, including commercial applications,"),
                   text);
  assert_non_null(strstr(text, "original example.\n\nAltered versions"));
  assert_null(strstr(text, "Copyright:"));
  assert_null(strstr(text, "Thanks."));
  assert_null(strstr(text, "@"));
  assert_null(strstr(text, "WARRANTY"));
  const char *first = strstr(text, "A serving benchmark");
  assert_non_null(first);
  assert_null(strstr(first + 1, "A serving benchmark"));
}

static void test_prose_too_little_is_an_error(void **state) {
  (void)state;
  ProseCorpus c;
  char err[512];
  const char *sources[] = {PROSE_DIR "/copyright", "tests/fixtures/no-such-dir/*"};
  assert_false(prose_load(&c, sources, 2, 100000, err, sizeof err));
  assert_non_null(strstr(err, "found only "));
  assert_non_null(strstr(err, "in 1 readable text files"));
}

// Every value is a piece of the corpus that starts a word and ends one.
static void check_value(const ProseCorpus *c, const char *value) {
  assert_true(value[0] && !isspace((unsigned char)value[0]));
  assert_false(isspace((unsigned char)value[strlen(value) - 1]));
  const char *at = strstr(c->text.data, value);
  assert_non_null(at);
  char after = at[strlen(value)];
  assert_true(after == '\0' || after == ' ' || after == '\n');
}

static void test_synth_layout_and_cuts(void **state) {
  Fixture *f = *state;
  json_t *list = synth_sharegpt(&(SynthParams){.num_conversations = 60, .seed = 1}, &f->corpus,
                                &f->tok);
  assert_int_equal(json_array_size(list), 60);
  size_t i, num_two_or_more = 0;
  json_t *entry;
  json_array_foreach(list, i, entry) {
    char id[32];
    snprintf(id, sizeof id, "synth-%05zu", i);
    assert_string_equal(json_string_value(json_object_get(entry, "id")), id);
    json_t *turns = json_object_get(entry, "conversations");
    size_t num_turns = json_array_size(turns);
    assert_true(num_turns == 1 || num_turns == 2 || num_turns == 4);
    num_two_or_more += num_turns >= 2;
    for (size_t k = 0; k < num_turns; k++) {
      json_t *turn = json_array_get(turns, k);
      const char *from = json_string_value(json_object_get(turn, "from"));
      assert_string_equal(from, k % 2 ? "gpt" : "human");
      check_value(&f->corpus, json_string_value(json_object_get(turn, "value")));
    }
  }
  assert_true(num_two_or_more >= 50);
  json_decref(list);
}

static void test_synth_same_seed_same_file(void **state) {
  Fixture *f = *state;
  char *dumps[3];
  for (int k = 0; k < 3; k++) {
    SynthParams p = {.num_conversations = 20, .seed = k < 2 ? 5 : 6};
    json_t *list = synth_sharegpt(&p, &f->corpus, &f->tok);
    dumps[k] = json_dumps(list, 0);
    json_decref(list);
  }
  assert_string_equal(dumps[0], dumps[1]);
  assert_string_not_equal(dumps[0], dumps[2]);
  for (int k = 0; k < 3; k++) free(dumps[k]);
}

// A written synthetic file loads as ShareGPT and is labelled as synthetic.
static void test_synth_file_is_labelled_synthetic(void **state) {
  Fixture *f = *state;
  json_t *list = synth_sharegpt(&(SynthParams){.num_conversations = 40, .seed = 2}, &f->corpus,
                                &f->tok);
  char path[] = "/tmp/test_sharegpt_synth.XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(json_dump_file(list, path, JSON_INDENT(2)), 0);
  close(fd);
  Dataset d;
  char err[1024];
  ShareGptParams p = {.path = path, .num_requests = 10, .output_len = -1, .no_oversample = true};
  assert_true(dataset_load_sharegpt(&p, &f->tok, &d, err, sizeof err));
  assert_string_equal(d.name, "sharegpt-synth");
  dataset_free(&d);
  unlink(path);
  json_decref(list);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_prose_keeps_distinct_prose_paragraphs),
      cmocka_unit_test(test_prose_too_little_is_an_error),
      cmocka_unit_test(test_synth_layout_and_cuts),
      cmocka_unit_test(test_synth_same_seed_same_file),
      cmocka_unit_test(test_synth_file_is_labelled_synthetic),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
