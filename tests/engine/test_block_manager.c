// test_block_manager.c: the KV block pool: on-demand growth of block tables, all-or-nothing
// allocation, release, usage counts, the "can it ever fit" admission check; and the prefix
// cache: the hash chain (SHA-256 of the parent's hash and the block's tokens, checked against
// a digest computed here), shared blocks and their reference counts, least-recently-used
// eviction order, a hit taking a free block back, the last token never hit, caching off; and
// under a random mix of grows, hits, caching and releases that every block is held exactly as
// often as its reference count says, the free queue holds exactly the unreferenced blocks, and
// everything is free again at the end; hybrid pools (window blocks, the null block, sliding,
// the most a request holds, hits that need the window before them).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <stdbool.h>
#include <string.h>

#include "core/block_manager.h"

// A table with storage of its own.
typedef struct {
  BlockTable t;
  int32_t ids[64];
  int32_t window_ids[64];
  BlockHash hashes[64];
} Table;

static void table_init(Table *x, int capacity) {
  assert_true(capacity <= 64);
  blocks_table_init(&x->t, x->ids, NULL, x->hashes, capacity);
}

// A table of a hybrid pool.
static void table_init_hybrid(Table *x, int capacity) {
  assert_true(capacity <= 64);
  blocks_table_init(&x->t, x->ids, x->window_ids, x->hashes, capacity);
}

// The free queue from head to tail, checked against num_free; returns its length.
static int free_queue(const BlockManager *bm, int32_t *out) {
  int n = 0;
  for (int32_t b = bm->free_head; b >= 0; b = bm->free_next[b]) out[n++] = b;
  assert_int_equal(n, bm->num_free);
  return n;
}

// Every block unreferenced and in the free queue.
static void assert_all_free(const BlockManager *bm) {
  int32_t q[256];
  assert_true(bm->num_blocks <= 256);
  assert_int_equal(free_queue(bm, q), bm->num_blocks);
  assert_int_equal(blocks_num_used(bm), 0);
  for (int b = 0; b < bm->num_blocks; b++) assert_int_equal(bm->ref_count[b], 0);
}

// ---------------------------------------------------------------------------------------------
// Plain allocation (caching off)

static void test_grow_on_demand(void **state) {
  (void)state;
  BlockManager bm;
  blocks_init(&bm, 8, 4, false);
  assert_int_equal(bm.num_free, 8);
  assert_int_equal(blocks_num_used(&bm), 0);
  Table x;
  table_init(&x, blocks_for_tokens(32, 4));
  BlockTable *t = &x.t;
  assert_int_equal(t->capacity, 8);
  assert_int_equal(t->num_blocks, 0);
  assert_true(blocks_grow(&bm, t, 1));
  assert_int_equal(t->num_blocks, 1);
  assert_int_equal(t->ids[0], 0);       // a fresh pool hands out 0, 1, 2, ...
  assert_true(blocks_grow(&bm, t, 4));  // still one block
  assert_int_equal(t->num_blocks, 1);
  assert_true(blocks_grow(&bm, t, 10));
  assert_int_equal(t->num_blocks, 3);
  assert_int_equal(t->ids[1], 1);
  assert_int_equal(t->ids[2], 2);
  assert_true(blocks_grow(&bm, t, 7));  // shrinking asks nothing
  assert_int_equal(t->num_blocks, 3);
  assert_int_equal(blocks_num_used(&bm), 3);
  blocks_release(&bm, t);
  assert_int_equal(t->num_blocks, 0);
  assert_int_equal(blocks_num_used(&bm), 0);
  // Released blocks join the tail (last block first): the never-used ones come out first.
  int32_t q[8], want[] = {3, 4, 5, 6, 7, 2, 1, 0};
  assert_int_equal(free_queue(&bm, q), 8);
  assert_memory_equal(q, want, sizeof want);
  assert_true(blocks_grow(&bm, t, 12));
  assert_int_equal(t->ids[0], 3);
  assert_int_equal(t->ids[2], 5);
  blocks_free(&bm);
}

static void test_all_or_nothing(void **state) {
  (void)state;
  BlockManager bm;
  blocks_init(&bm, 5, 4, false);
  Table a, b;
  table_init(&a, 5);
  table_init(&b, 5);
  assert_true(blocks_grow(&bm, &a.t, 12));  // 3 blocks
  assert_false(blocks_grow(&bm, &b.t, 9));  // 3 more: only 2 free
  assert_int_equal(b.t.num_blocks, 0);
  assert_int_equal(bm.num_free, 2);
  assert_true(blocks_grow(&bm, &b.t, 8));  // 2 fit
  assert_int_equal(bm.num_free, 0);
  assert_false(blocks_grow(&bm, &a.t, 13));
  assert_int_equal(a.t.num_blocks, 3);
  blocks_release(&bm, &b.t);
  assert_true(blocks_grow(&bm, &a.t, 13));
  assert_int_equal(blocks_num_used(&bm), 4);
  blocks_free(&bm);
}

static void test_can_ever_fit(void **state) {
  (void)state;
  BlockManager bm;
  blocks_init(&bm, 4, 16, false);
  assert_true(blocks_can_ever_fit(&bm, 1));
  assert_true(blocks_can_ever_fit(&bm, 64));
  assert_false(blocks_can_ever_fit(&bm, 65));
  assert_int_equal(blocks_for_tokens(0, 16), 0);
  assert_int_equal(blocks_for_tokens(16, 16), 1);
  assert_int_equal(blocks_for_tokens(17, 16), 2);
  blocks_free(&bm);
}

// ---------------------------------------------------------------------------------------------
// The prefix cache

// SHA-256 of (parent, tokens [n]) computed here, independently of the block manager.
static BlockHash digest_of(const BlockHash *parent, const uint32_t *tokens, int n) {
  uint8_t buf[32 + 64 * 4] = {0};
  if (parent) memcpy(buf, parent->bytes, 32);
  memcpy(buf + 32, tokens, (size_t)n * 4);
  BlockHash h;
  unsigned int len;
  assert_int_equal(EVP_Digest(buf, 32 + (size_t)n * 4, h.bytes, &len, EVP_sha256(), NULL), 1);
  return h;
}

// Runs t through the admission path: finds its hits, takes them and blocks for num_tokens.
static int admit(BlockManager *bm, Table *x, const uint32_t *tokens, int num_known,
                 int num_tokens) {
  int hits = blocks_find_cached(bm, &x->t, tokens, num_known);
  assert_true(blocks_admit(bm, &x->t, hits, num_tokens));
  return hits;
}

static void test_hash_chain(void **state) {
  (void)state;
  BlockManager bm;
  blocks_init(&bm, 16, 4, true);
  uint32_t a[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  uint32_t b[12] = {9, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};  // differs only in block 0
  Table x, y;
  table_init(&x, 4);
  table_init(&y, 4);
  assert_int_equal(admit(&bm, &x, a, 12, 12), 0);
  assert_int_equal(x.t.num_hashes, 2);  // lookup hashes (12 - 1) / 4 = 2 blocks
  BlockHash h0 = digest_of(NULL, a, 4), h1 = digest_of(&h0, a + 4, 4);
  assert_memory_equal(x.t.hashes[0].bytes, h0.bytes, 32);
  assert_memory_equal(x.t.hashes[1].bytes, h1.bytes, 32);
  blocks_cache(&bm, &x.t, a, 12);  // the KV of all 12 written: 3 full blocks
  assert_int_equal(x.t.num_cached, 3);
  assert_int_equal(bm.num_cached, 3);
  BlockHash h2 = digest_of(&h1, a + 8, 4);
  assert_memory_equal(x.t.hashes[2].bytes, h2.bytes, 32);
  // Same tokens in blocks 1 and 2, a different block 0: different hashes all along the chain.
  assert_int_equal(admit(&bm, &y, b, 12, 12), 0);
  assert_memory_not_equal(y.t.hashes[1].bytes, h1.bytes, 32);
  BlockHash g0 = digest_of(NULL, b, 4), g1 = digest_of(&g0, b + 4, 4);
  assert_memory_equal(y.t.hashes[1].bytes, g1.bytes, 32);
  blocks_release(&bm, &x.t);
  blocks_release(&bm, &y.t);
  blocks_free(&bm);
}

// Two tables share a cached prefix: reference counts, usage, release order.
static void test_shared_blocks_and_refcounts(void **state) {
  (void)state;
  BlockManager bm;
  blocks_init(&bm, 16, 4, true);
  uint32_t p[16] = {5, 6, 7, 8, 1, 2, 3, 4, 9, 9, 9, 9, 7, 7, 7, 7};
  uint32_t q[16] = {5, 6, 7, 8, 1, 2, 3, 4, 9, 9, 9, 9, 8, 8, 8, 8};  // 3 blocks shared
  Table x, y, z;
  table_init(&x, 4);
  table_init(&y, 4);
  table_init(&z, 4);
  assert_int_equal(admit(&bm, &x, p, 16, 16), 0);
  assert_int_equal(admit(&bm, &z, p, 16, 16), 0);  // before x's KV is written: no hit
  blocks_cache(&bm, &x.t, p, 10);                  // 10 tokens written: blocks 0 and 1
  assert_int_equal(bm.num_cached, 2);
  blocks_release(&bm, &z.t);
  blocks_cache(&bm, &x.t, p, 16);
  assert_int_equal(bm.num_cached, 4);
  assert_int_equal(blocks_num_used(&bm), 4);
  assert_int_equal(admit(&bm, &y, q, 16, 16), 3);  // 3 hits, 1 fresh block
  for (int i = 0; i < 3; i++) {
    assert_int_equal(y.t.ids[i], x.t.ids[i]);
    assert_int_equal(bm.ref_count[x.t.ids[i]], 2);
  }
  assert_int_equal(bm.ref_count[x.t.ids[3]], 1);
  assert_int_not_equal(y.t.ids[3], x.t.ids[3]);
  assert_int_equal(y.t.num_cached, 3);
  assert_int_equal(blocks_num_used(&bm), 5);
  blocks_release(&bm, &x.t);
  assert_int_equal(blocks_num_used(&bm), 4);  // only x's last block went free
  for (int i = 0; i < 3; i++) assert_int_equal(bm.ref_count[y.t.ids[i]], 1);
  blocks_release(&bm, &y.t);
  assert_all_free(&bm);
  assert_int_equal(bm.num_cached, 4);  // freed blocks keep their hashes
  blocks_free(&bm);
}

// A hit on a free cached block takes it out of the free queue; the last token never hits.
static void test_hit_takes_free_block_back(void **state) {
  (void)state;
  BlockManager bm;
  blocks_init(&bm, 6, 4, true);
  uint32_t p[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  Table x, y, w;
  table_init(&x, 2);
  table_init(&y, 3);
  table_init(&w, 6);
  admit(&bm, &x, p, 8, 8);
  blocks_cache(&bm, &x.t, p, 8);
  int32_t b0 = x.t.ids[0], b1 = x.t.ids[1];
  blocks_release(&bm, &x.t);
  assert_int_equal(bm.num_free, 6);
  // The whole 8-token prompt is cached, but its last token must be computed: 1 block hits.
  assert_int_equal(blocks_find_cached(&bm, &y.t, p, 8), 1);
  uint32_t longer[9] = {1, 2, 3, 4, 5, 6, 7, 8, 100};
  assert_int_equal(blocks_find_cached(&bm, &y.t, longer, 9), 2);
  assert_true(blocks_admit(&bm, &y.t, 2, 9));
  assert_int_equal(y.t.ids[0], b0);
  assert_int_equal(y.t.ids[1], b1);
  assert_int_equal(bm.num_free, 3);  // the 2 hits left the queue, 1 fresh block was taken
  int32_t q[6];
  assert_int_equal(free_queue(&bm, q), 3);
  for (int i = 0; i < 3; i++) assert_true(q[i] != b0 && q[i] != b1);
  // What is left: 3 free blocks, so 4 do not fit (all or nothing), 3 do.
  assert_false(blocks_grow(&bm, &w.t, 16));
  assert_true(blocks_grow(&bm, &w.t, 12));
  assert_int_equal(bm.num_free, 0);
  blocks_release(&bm, &w.t);
  blocks_release(&bm, &y.t);
  assert_all_free(&bm);
  blocks_free(&bm);
}

// Freed blocks are evicted least recently used first: a table's tail before its head, and an
// older release before a newer one; never-used blocks before any cached one.
static void test_lru_eviction_order(void **state) {
  (void)state;
  BlockManager bm;
  blocks_init(&bm, 6, 2, true);
  uint32_t p[4] = {1, 2, 3, 4}, r[4] = {5, 6, 7, 8};
  Table x, y, f;
  table_init(&x, 3);
  table_init(&y, 3);
  table_init(&f, 6);
  admit(&bm, &x, p, 4, 4);  // blocks 0, 1
  admit(&bm, &y, r, 4, 4);  // blocks 2, 3
  blocks_cache(&bm, &x.t, p, 4);
  blocks_cache(&bm, &y.t, r, 4);
  blocks_release(&bm, &x.t);  // queue: 4 5 | 1 0
  blocks_release(&bm, &y.t);  // queue: 4 5 1 0 3 2
  int32_t q[6], want[] = {4, 5, 1, 0, 3, 2};
  assert_int_equal(free_queue(&bm, q), 6);
  assert_memory_equal(q, want, sizeof want);
  assert_true(blocks_grow(&bm, &f.t, 6));  // 3 blocks: 4, 5, then x's tail block 1 is evicted
  assert_int_equal(f.t.ids[2], 1);
  assert_int_equal(bm.num_cached, 3);
  uint32_t p5[5] = {1, 2, 3, 4, 0}, r5[5] = {5, 6, 7, 8, 0};
  assert_int_equal(blocks_find_cached(&bm, &x.t, p5, 5), 1);  // x's head block 0 survives
  assert_int_equal(x.t.ids[0], 0);
  assert_int_equal(blocks_find_cached(&bm, &y.t, r5, 5), 2);
  // y's hits leave the queue (0 3 2 -> 0): its fresh block is x's cached block 0, evicted.
  assert_true(blocks_admit(&bm, &y.t, 2, 5));
  assert_int_equal(y.t.ids[2], 0);
  assert_int_equal(bm.num_cached, 2);
  x.t.num_hashes = 0;
  assert_int_equal(blocks_find_cached(&bm, &x.t, p5, 5), 0);
  blocks_release(&bm, &y.t);
  blocks_release(&bm, &f.t);
  assert_all_free(&bm);
  blocks_free(&bm);
}

static void test_caching_off(void **state) {
  (void)state;
  BlockManager bm;
  blocks_init(&bm, 4, 2, false);
  uint32_t p[5] = {1, 2, 3, 4, 5};
  Table x, y;
  table_init(&x, 3);
  table_init(&y, 3);
  assert_int_equal(admit(&bm, &x, p, 5, 5), 0);
  blocks_cache(&bm, &x.t, p, 5);
  assert_int_equal(x.t.num_cached, 0);
  assert_int_equal(bm.num_cached, 0);
  blocks_release(&bm, &x.t);
  assert_int_equal(blocks_find_cached(&bm, &y.t, p, 5), 0);
  blocks_free(&bm);
}

// Random admissions (with hits), growth, caching of what was "written" and releases over several
// tables drawing on a few shared prefixes, with caching off and on, in a plain and a hybrid pool
// (window blocks released as the tables advance): every block is held as often as its reference
// count says, the free queue holds exactly the unreferenced blocks (never the null block), a
// hybrid table's skipped entries are the null block and the rest is what its next token sees,
// and all is free at the end.
static void test_random_ownership(void **state) {
  (void)state;
  enum { NUM_BLOCKS = 48, NUM_TABLES = 6, BS = 4, MAX_TOKENS = 40, WINDOW = 6, CHUNK = 8 };
  for (int mode = 0; mode < 4; mode++) {
    const bool caching = mode & 1, hybrid = mode >> 1;
    BlockManager bm;
    if (hybrid)
      blocks_init_hybrid(&bm, NUM_BLOCKS, BS, caching, WINDOW, CHUNK);
    else
      blocks_init(&bm, NUM_BLOCKS, BS, caching);
    Table t[NUM_TABLES];
    uint32_t tokens[NUM_TABLES][MAX_TOKENS];
    int num_tokens[NUM_TABLES] = {0}, written[NUM_TABLES] = {0};
    for (int i = 0; i < NUM_TABLES; i++) {
      if (hybrid)
        table_init_hybrid(&t[i], MAX_TOKENS / BS);
      else
        table_init(&t[i], MAX_TOKENS / BS);
    }
    uint64_t x = 12345;
    int num_hits = 0;
    for (int iter = 0; iter < 5000; iter++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      int i = (int)(x % NUM_TABLES);
      BlockTable *bt = &t[i].t;
      if (bt->num_blocks == 0) {  // admit: one of 3 prefixes, then a tail of its own
        int family = (int)((x >> 8) % 3), n = 2 + (int)((x >> 12) % (MAX_TOKENS - 2));
        for (int k = 0; k < n; k++)
          tokens[i][k] = k < 20 ? (uint32_t)(family * 100 + k) : (uint32_t)(x >> 20) + (uint32_t)k;
        bt->num_hashes = 0;
        int hits = blocks_find_cached(&bm, bt, tokens[i], n);
        int want = hits * BS + 1;
        if (blocks_admit(&bm, bt, hits, want)) {
          num_tokens[i] = n;
          written[i] = hits * BS;
          num_hits += hits;
        }
      } else if ((x >> 8) % 4 == 0) {
        blocks_release(&bm, bt);
      } else {  // the step ran: its KV is written; slide and grow for the next chunk
        int w = written[i] + 1 + (int)((x >> 16) % 7);
        if (w > num_tokens[i]) w = num_tokens[i];
        if (w > bt->num_blocks * BS) w = bt->num_blocks * BS;
        written[i] = w;
        blocks_cache(&bm, bt, tokens[i], w);
        int grow = w + 1 + (int)((x >> 24) % 5);
        if (w < num_tokens[i]) {
          blocks_slide(&bm, bt, tokens[i], num_tokens[i], w);
          if (hybrid) {  // the window of the token at w starts at w - WINDOW + 1
            int first = (w - WINDOW + 1 > 0 ? w - WINDOW + 1 : 0) / BS;
            assert_int_equal(bt->num_skipped, first < bt->num_blocks ? first : bt->num_blocks);
          }
          blocks_grow(&bm, bt, grow < num_tokens[i] ? grow : num_tokens[i]);
        }
      }
      int held[NUM_BLOCKS] = {0};
      for (int k = 0; k < NUM_TABLES; k++)
        for (int b = 0; b < t[k].t.num_blocks; b++) {
          held[t[k].t.ids[b]]++;
          if (!hybrid) continue;
          if (b < t[k].t.num_skipped)
            assert_int_equal(t[k].t.window_ids[b], BLOCK_NULL);
          else
            held[t[k].t.window_ids[b]]++;
        }
      bool queued[NUM_BLOCKS] = {false};
      int32_t q[NUM_BLOCKS];
      int nq = free_queue(&bm, q);
      for (int k = 0; k < nq; k++) {
        assert_false(queued[q[k]]);
        queued[q[k]] = true;
      }
      int num_cached = 0;
      for (int b = 0; b < NUM_BLOCKS; b++) {
        assert_int_equal(held[b], bm.ref_count[b]);
        if (hybrid && b == BLOCK_NULL)
          assert_false(queued[b] || held[b] || (caching && bm.is_cached[b]));
        else
          assert_int_equal(queued[b], held[b] == 0);
        if (caching && bm.is_cached[b]) num_cached++;
      }
      assert_int_equal(num_cached, bm.num_cached);
      assert_int_equal(bm.num_free + blocks_num_used(&bm), NUM_BLOCKS - hybrid);
    }
    for (int i = 0; i < NUM_TABLES; i++) blocks_release(&bm, &t[i].t);
    if (hybrid) {
      assert_int_equal(bm.num_free, NUM_BLOCKS - 1);
      assert_int_equal(blocks_num_used(&bm), 0);
    } else {
      assert_all_free(&bm);
    }
    if (caching)
      assert_true(num_hits > 100);  // the shared prefixes were found
    else
      assert_int_equal(num_hits, 0);
    blocks_free(&bm);
  }
}

// ---------------------------------------------------------------------------------------------
// Hybrid pools

// Block size 4, window 6: the token at position p sees positions p - 5 .. p, so from block
// (p - 5) / 4 on. Each block of tokens takes one block per group; the null block is never handed
// out; sliding releases the window blocks no later token sees; the most a request ever holds.
static void test_hybrid_slide_and_sizes(void **state) {
  (void)state;
  BlockManager bm;
  blocks_init_hybrid(&bm, 10, 4, false, 6, 8);
  assert_int_equal(blocks_num_usable(&bm), 9);
  assert_int_equal(bm.num_free, 9);
  assert_int_equal(blocks_num_used(&bm), 0);
  Table x;
  table_init_hybrid(&x, 16);
  BlockTable *t = &x.t;
  assert_true(blocks_grow(&bm, t, 10));  // 3 blocks of tokens: full 1, 3, 5; window 2, 4, 6
  int32_t want_ids[] = {1, 3, 5}, want_window[] = {2, 4, 6};
  assert_memory_equal(t->ids, want_ids, sizeof want_ids);
  assert_memory_equal(t->window_ids, want_window, sizeof want_window);
  assert_int_equal(blocks_num_used(&bm), 6);
  blocks_slide(&bm, t, NULL, 0, 9);  // sees 4 .. 9: block 1 on, block 0 leaves (caching off)
  assert_int_equal(t->num_skipped, 1);
  assert_int_equal(t->window_ids[0], BLOCK_NULL);
  assert_int_equal(bm.ref_count[2], 0);
  assert_int_equal(bm.free_tail, 2);  // released to the tail
  assert_int_equal(blocks_num_used(&bm), 5);
  blocks_slide(&bm, t, NULL, 0, 9);  // again: nothing more
  blocks_slide(&bm, t, NULL, 0, 4);  // and never back
  assert_int_equal(t->num_skipped, 1);
  assert_int_equal(blocks_num_used(&bm), 5);
  assert_false(blocks_grow(&bm, t, 21));  // 3 more blocks of tokens need 6 of the 4 free
  assert_int_equal(t->num_blocks, 3);
  assert_true(blocks_grow(&bm, t, 13));  // one more of each: 7 and 8
  assert_int_equal(t->ids[3], 7);
  assert_int_equal(t->window_ids[3], 8);
  blocks_slide(&bm, t, NULL, 0, 13);  // sees 8 .. 13: blocks 0 and 1 gone
  assert_int_equal(t->num_skipped, 2);
  assert_int_equal(t->window_ids[1], BLOCK_NULL);
  blocks_release(&bm, t);
  assert_int_equal(t->num_skipped, 0);
  assert_int_equal(blocks_num_used(&bm), 0);
  assert_int_equal(bm.num_free, 9);
  assert_int_equal(bm.ref_count[BLOCK_NULL], 0);
  int32_t q[10];
  for (int i = 0, n = free_queue(&bm, q); i < n; i++) assert_true(q[i] != BLOCK_NULL);
  // The most held at once: n blocks of tokens, plus min(n, a step's window span), where a step
  // of up to 8 tokens sees 5 before it: 13 positions over at most ceil(13 / 4) + 1 = 5 blocks.
  assert_int_equal(blocks_most_needed(&bm, 16), 4 + 4);
  assert_int_equal(blocks_most_needed(&bm, 20), 5 + 5);
  assert_int_equal(blocks_most_needed(&bm, 100), 25 + 5);
  assert_true(blocks_can_ever_fit(&bm, 16));
  assert_false(blocks_can_ever_fit(&bm, 17));  // 5 + 5 > 9
  blocks_free(&bm);
}

// Sliding past a token not sampled yet (async scheduling plans the step after one whose
// sample is pending): window 1, 8 positions computed but 7 tokens known. Both window blocks
// leave; only block 0, whose 4 tokens are known, is offered to the cache (block 1 would be
// hashed over token 7, which is not there yet).
static void test_hybrid_slide_caches_known_blocks_only(void **state) {
  (void)state;
  BlockManager bm;
  blocks_init_hybrid(&bm, 16, 4, true, 1, 8);
  Table x;
  table_init_hybrid(&x, 4);
  uint32_t tokens[8] = {11, 12, 13, 14, 15, 16, 17, 0};  // tokens[7]: the pending sample
  assert_int_equal(blocks_find_cached(&bm, &x.t, tokens, 7), 0);
  assert_true(blocks_admit(&bm, &x.t, 0, 8));
  const int32_t w0 = x.window_ids[0], w1 = x.window_ids[1];
  blocks_slide(&bm, &x.t, tokens, 7, 8);  // position 8 sees 8 alone: blocks 0 and 1 leave
  assert_int_equal(x.t.num_skipped, 2);
  assert_int_equal(x.t.window_ids[0], BLOCK_NULL);
  assert_int_equal(x.t.window_ids[1], BLOCK_NULL);
  assert_int_equal(bm.num_cached, 1);
  assert_true(bm.is_cached[w0] && bm.is_window[w0]);
  assert_false(bm.is_cached[w1]);
  blocks_release(&bm, &x.t);
  assert_int_equal(blocks_num_used(&bm), 0);
  blocks_free(&bm);
}

// Admits a hybrid table for tokens [n] after its hits; returns the hits.
static int admit_hybrid(BlockManager *bm, Table *x, const uint32_t *tokens, int n) {
  table_init_hybrid(x, 16);
  int hits = blocks_find_cached(bm, &x->t, tokens, n);
  assert_true(blocks_admit(bm, &x->t, hits, n));
  return hits;
}

// A hit needs the full blocks of the prefix and the window blocks its first computed token
// sees; each group's cache is its own (the full group's block of a prefix is no window hit);
// window blocks leaving the window are offered to the cache as they go.
static void test_hybrid_prefix_hits(void **state) {
  (void)state;
  BlockManager bm;
  blocks_init_hybrid(&bm, 16, 4, true, 6, 32);  // 15 usable blocks
  uint32_t p[32];
  for (int i = 0; i < 32; i++) p[i] = 500 + (uint32_t)i;
  // A computes 24 tokens (full blocks 1, 3, .. 11; window blocks 2, 4, .. 12). Planning its next
  // step (position 24 sees 19 .. 24) releases window blocks 0 .. 3, cached as they go, before
  // the update that caches the rest (async scheduling's order).
  Table a, b, c, d;
  assert_int_equal(admit_hybrid(&bm, &a, p, 24), 0);
  blocks_slide(&bm, &a.t, p, 24, 24);
  assert_int_equal(a.t.num_skipped, 4);
  assert_int_equal(bm.num_cached, 4);
  blocks_cache(&bm, &a.t, p, 24);
  assert_int_equal(a.t.num_cached, 6);
  assert_int_equal(bm.num_cached, 6 + 6);
  blocks_release(&bm, &a.t);
  // B: the 24 tokens and one more: all 6 blocks hit, the window's from block 4 on, the window
  // entries before are null; one fresh block of each group for token 24 (13, 14).
  assert_int_equal(admit_hybrid(&bm, &b, p, 25), 6);
  assert_int_equal(b.t.num_skipped, 4);
  for (int i = 0; i < 4; i++) assert_int_equal(b.t.window_ids[i], BLOCK_NULL);
  for (int i = 0; i < 6; i++) assert_int_equal(b.t.ids[i], a.ids[i]);
  assert_int_equal(b.t.window_ids[4], a.window_ids[4]);
  assert_int_equal(b.t.window_ids[5], a.window_ids[5]);
  assert_int_equal(b.t.num_blocks, 7);
  assert_int_equal(bm.ref_count[a.window_ids[5]], 1);
  // The first 16 tokens and one more: position 16 sees 11 .. 16, window blocks 2 and 3, cached
  // when A's window left them: 4 blocks hit.
  table_init_hybrid(&c, 16);
  assert_int_equal(blocks_find_cached(&bm, &c.t, p, 17), 4);
  // D takes 4 fresh blocks: the free queue is 15, then A's window blocks 0 .. 3 in the order
  // they left (2, 4, 6, 8), so 15, 2, 4 and 6 are evicted.
  table_init_hybrid(&d, 16);
  assert_true(blocks_grow(&bm, &d.t, 8));
  assert_int_equal(d.t.ids[0], 15);
  assert_int_equal(d.t.window_ids[1], 6);
  // Now the same 17 tokens hit nothing: the 4 full blocks are still cached (B holds them), but
  // window block 2 is gone, and so are 0 and 1, which a hit ending at block 2 or 1 would need.
  table_init_hybrid(&c, 16);
  assert_int_equal(blocks_find_cached(&bm, &c.t, p, 17), 0);
  blocks_release(&bm, &b.t);
  blocks_release(&bm, &d.t);
  assert_int_equal(blocks_num_used(&bm), 0);
  blocks_free(&bm);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grow_on_demand),
      cmocka_unit_test(test_all_or_nothing),
      cmocka_unit_test(test_can_ever_fit),
      cmocka_unit_test(test_hash_chain),
      cmocka_unit_test(test_shared_blocks_and_refcounts),
      cmocka_unit_test(test_hit_takes_free_block_back),
      cmocka_unit_test(test_lru_eviction_order),
      cmocka_unit_test(test_caching_off),
      cmocka_unit_test(test_random_ownership),
      cmocka_unit_test(test_hybrid_slide_and_sizes),
      cmocka_unit_test(test_hybrid_prefix_hits),
      cmocka_unit_test(test_hybrid_slide_caches_known_blocks_only),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
