// test_block_manager.c: the KV block pool: on-demand growth of block tables, all-or-nothing
// allocation, release, usage counts, the "can it ever fit" admission check, and that no block
// is ever owned twice under a random mix of grows and releases.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "core/block_manager.h"

static void test_grow_on_demand(void **state) {
  (void)state;
  BlockManager bm;
  blocks_init(&bm, 8, 4);
  assert_int_equal(bm.num_free, 8);
  assert_int_equal(blocks_num_used(&bm), 0);
  BlockTable t;
  int32_t ids[8];
  blocks_table_init(&t, ids, blocks_for_tokens(32, 4));
  assert_int_equal(t.capacity, 8);
  assert_int_equal(t.num_blocks, 0);
  assert_true(blocks_grow(&bm, &t, 1));
  assert_int_equal(t.num_blocks, 1);
  assert_int_equal(t.ids[0], 0);  // a fresh pool hands out 0, 1, 2, ...
  assert_true(blocks_grow(&bm, &t, 4));  // still one block
  assert_int_equal(t.num_blocks, 1);
  assert_true(blocks_grow(&bm, &t, 10));
  assert_int_equal(t.num_blocks, 3);
  assert_int_equal(t.ids[1], 1);
  assert_int_equal(t.ids[2], 2);
  assert_true(blocks_grow(&bm, &t, 7));  // shrinking asks nothing
  assert_int_equal(t.num_blocks, 3);
  assert_int_equal(blocks_num_used(&bm), 3);
  blocks_release(&bm, &t);
  assert_int_equal(t.num_blocks, 0);
  assert_int_equal(blocks_num_used(&bm), 0);
  assert_true(blocks_grow(&bm, &t, 12));  // released blocks come back in the same order
  assert_int_equal(t.ids[0], 0);
  assert_int_equal(t.ids[1], 1);
  assert_int_equal(t.ids[2], 2);
  blocks_free(&bm);
}

static void test_all_or_nothing(void **state) {
  (void)state;
  BlockManager bm;
  blocks_init(&bm, 5, 4);
  BlockTable a, b;
  int32_t a_ids[5], b_ids[5];
  blocks_table_init(&a, a_ids, 5);
  blocks_table_init(&b, b_ids, 5);
  assert_true(blocks_grow(&bm, &a, 12));  // 3 blocks
  assert_false(blocks_grow(&bm, &b, 9));  // 3 more: only 2 free
  assert_int_equal(b.num_blocks, 0);
  assert_int_equal(bm.num_free, 2);
  assert_true(blocks_grow(&bm, &b, 8));   // 2 fit
  assert_int_equal(bm.num_free, 0);
  assert_false(blocks_grow(&bm, &a, 13));
  assert_int_equal(a.num_blocks, 3);
  blocks_release(&bm, &b);
  assert_true(blocks_grow(&bm, &a, 13));
  assert_int_equal(blocks_num_used(&bm), 4);
  blocks_free(&bm);
}

static void test_can_ever_fit(void **state) {
  (void)state;
  BlockManager bm;
  blocks_init(&bm, 4, 16);
  assert_true(blocks_can_ever_fit(&bm, 1));
  assert_true(blocks_can_ever_fit(&bm, 64));
  assert_false(blocks_can_ever_fit(&bm, 65));
  assert_int_equal(blocks_for_tokens(0, 16), 0);
  assert_int_equal(blocks_for_tokens(16, 16), 1);
  assert_int_equal(blocks_for_tokens(17, 16), 2);
  blocks_free(&bm);
}

// Random grows and releases over several tables: every block is owned by at most one table or
// free, and the counts add up.
static void test_random_ownership(void **state) {
  (void)state;
  enum { NUM_BLOCKS = 64, NUM_TABLES = 6, BS = 4 };
  BlockManager bm;
  blocks_init(&bm, NUM_BLOCKS, BS);
  BlockTable t[NUM_TABLES];
  int32_t ids[NUM_TABLES][NUM_BLOCKS];
  int tokens[NUM_TABLES] = {0};
  for (int i = 0; i < NUM_TABLES; i++) blocks_table_init(&t[i], ids[i], NUM_BLOCKS);
  uint64_t x = 12345;
  for (int iter = 0; iter < 5000; iter++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int i = (int)(x % NUM_TABLES);
    if ((x >> 8) % 5 == 0) {
      blocks_release(&bm, &t[i]);
      tokens[i] = 0;
    } else {
      int want = tokens[i] + 1 + (int)((x >> 16) % 9);
      bool ok = blocks_grow(&bm, &t[i], want);
      if (ok) tokens[i] = want;
      assert_int_equal(t[i].num_blocks, blocks_for_tokens(tokens[i], BS));
    }
    bool owned[NUM_BLOCKS];
    memset(owned, 0, sizeof owned);
    int used = 0;
    for (int k = 0; k < NUM_TABLES; k++)
      for (int b = 0; b < t[k].num_blocks; b++) {
        assert_false(owned[t[k].ids[b]]);
        owned[t[k].ids[b]] = true;
        used++;
      }
    for (int f = 0; f < bm.num_free; f++) {
      assert_false(owned[bm.free_ids[f]]);
      owned[bm.free_ids[f]] = true;
    }
    assert_int_equal(used, blocks_num_used(&bm));
    assert_int_equal(used + bm.num_free, NUM_BLOCKS);
  }
  blocks_free(&bm);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grow_on_demand),
      cmocka_unit_test(test_all_or_nothing),
      cmocka_unit_test(test_can_ever_fit),
      cmocka_unit_test(test_random_ownership),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
