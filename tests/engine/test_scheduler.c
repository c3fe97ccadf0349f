// test_scheduler.c: the scheduler, request table and batch builder against a fake runner, with
// and without prefix caching.
//
// The fake model is a deterministic function of the whole context, read back through the paged
// KV the way a real model reads it: every step writes each token (and its position) into the
// slot the Batch names, and a sequence that samples hashes its positions 0 .. seq_len - 1
// gathered through its block-table row. Each slot also keeps the hash of the context up to it
// as the sequence that wrote it saw it, and every read checks it: a shared (prefix-cached) block
// must hold the KV of the same whole prefix, not just the same tokens. So wrong slots, stale or
// missing KV after preemption, a wrong or premature cache hit, or an unpatched async input all
// change the tokens or fail a check. The reference run computes the same function on the plain
// token list, one sequence at a time, with no scheduler: every scheduled run must produce
// exactly its tokens and finish reasons. Over a hybrid pool every token is also written through
// the window slot mapping, and the positions a sequence's first new token sees are read back
// through its window table the same way (a window block released too early, or the full
// group's block named instead, fails).
//
// A prompt whose first token S is in 1 .. 999 makes the model sample a stop id (which one: the
// second token mod 3) when the context is S tokens long.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/batch_builder.h"
#include "core/request_table.h"
#include "core/scheduler.h"
#include "text/tokenizer.h"

#define MAX_REQS 64
#define MAX_OUT 128

static const uint32_t STOP_IDS[3] = {TOK_RETURN, TOK_CALL, TOK_ENDOFTEXT};

// ---------------------------------------------------------------------------------------------
// The fake model

typedef struct {
  uint64_t h;
  uint32_t first, second;
} FakeContext;

static void context_add(FakeContext *c, int pos, uint32_t token) {
  if (pos == 0) c->first = token;
  if (pos == 1) c->second = token;
  c->h = (c->h ^ token ^ ((uint64_t)pos << 32)) * 0x100000001b3ull;
}

static uint32_t fake_next(const FakeContext *c, int len) {
  if (c->first >= 1 && c->first < 1000 && (int)c->first == len) return STOP_IDS[c->second % 3];
  return 1000 + (uint32_t)((c->h >> 17) % 50000);
}

// Tokens one request produces alone: returns the count, sets the finish reason.
static int reference(const uint32_t *prompt, int num_prompt, int max_tokens, bool ignore_eos,
                     uint32_t *out, FinishReason *finish) {
  FakeContext c = {.h = 0xcbf29ce484222325ull};
  for (int i = 0; i < num_prompt; i++) context_add(&c, i, prompt[i]);
  for (int n = 0; n < max_tokens; n++) {
    uint32_t id = fake_next(&c, num_prompt + n);
    out[n] = id;
    context_add(&c, num_prompt + n, id);
    if (!ignore_eos && (id == TOK_RETURN || id == TOK_CALL || id == TOK_ENDOFTEXT)) {
      *finish = FINISH_STOP;
      return n + 1;
    }
  }
  *finish = FINISH_LENGTH;
  return max_tokens;
}

// ---------------------------------------------------------------------------------------------
// The harness: scheduler + builders + fake runner, sync or async pipeline

typedef struct {
  uint32_t prompt[MAX_OUT];
  int num_prompt;
  int max_tokens;
  bool ignore_eos;
  uint32_t tokens[MAX_OUT];  // output tokens from events
  int num_tokens;
  FinishReason finish;
  int num_finishes;
} Tracked;

typedef struct {
  EngineConfig config;
  BlockManager blocks;
  Scheduler s;
  BatchBuilder builders[2];
  SchedOutput outs[2];
  uint32_t *sampled[2];  // [max_num_seqs] per output
  uint32_t *kv_token;    // [num_kv_blocks * block_size] the fake KV: token per slot
  int32_t *kv_pos;       // [num_kv_blocks * block_size] its position, -1: never written
  uint64_t *kv_ctx;      // [num_kv_blocks * block_size] context hash through it when written
  bool was_running[MAX_REQS + 1];  // by id: running when the step being planned began
  int shared_prefix_len;       // add_request: prompt tokens 2 .. this - 1 are the same for every id
  int window;                  // > 0: a hybrid pool whose sliding layers see this many keys
  Tracked reqs[MAX_REQS + 1];  // by id
  int next;                    // async: the output and builder the next step uses
  bool in_flight;              // async: outs[1 - next] ran and awaits sched_update
  int num_steps;
  int num_patches;  // pending tokens patched in, over the run
} Harness;

// window > 0: a hybrid block pool (core/block_manager.h) for sliding layers of window keys.
static Harness *harness_new_pool(int block_size, int num_blocks, int budget, int max_seqs,
                                 bool async, bool caching, int window) {
  Harness *h = calloc(1, sizeof *h);
  h->window = window;
  h->config = (EngineConfig){.max_num_batched_tokens = budget,
                             .max_num_seqs = max_seqs,
                             .max_model_len = 4096,
                             .block_size = block_size,
                             .num_kv_blocks = num_blocks,
                             .async_scheduling = async,
                             .enable_prefix_caching = caching};
  if (window > 0)
    blocks_init_hybrid(&h->blocks, num_blocks, block_size, caching, window, budget);
  else
    blocks_init(&h->blocks, num_blocks, block_size, caching);
  sched_init(&h->s, &h->config, &h->blocks);
  for (int i = 0; i < 2; i++) {
    batch_builder_init(&h->builders[i], &h->config, window > 0);
    sched_output_init(&h->outs[i], &h->s);
    h->sampled[i] = calloc((size_t)max_seqs, sizeof *h->sampled[i]);
  }
  size_t num_slots = (size_t)num_blocks * (size_t)block_size;
  h->kv_token = calloc(num_slots, sizeof *h->kv_token);
  h->kv_pos = malloc(num_slots * sizeof *h->kv_pos);
  h->kv_ctx = calloc(num_slots, sizeof *h->kv_ctx);
  for (size_t i = 0; i < num_slots; i++) h->kv_pos[i] = -1;
  return h;
}

static Harness *harness_new_caching(int block_size, int num_blocks, int budget, int max_seqs,
                                    bool async, bool caching) {
  return harness_new_pool(block_size, num_blocks, budget, max_seqs, async, caching, 0);
}

static Harness *harness_new(int block_size, int num_blocks, int budget, int max_seqs, bool async) {
  return harness_new_caching(block_size, num_blocks, budget, max_seqs, async, false);
}

static void harness_free(Harness *h) {
  sched_free(&h->s);
  for (int i = 0; i < 2; i++) {
    batch_builder_free(&h->builders[i]);
    sched_output_free(&h->outs[i]);
    free(h->sampled[i]);
  }
  blocks_free(&h->blocks);
  free(h->kv_token);
  free(h->kv_pos);
  free(h->kv_ctx);
  free(h);
}

// Adds request id with the prompt [num_prompt].
static void add_prompt(Harness *h, uint64_t id, const uint32_t *prompt, int num_prompt,
                       int max_tokens, bool ignore_eos) {
  assert_true(id <= MAX_REQS && num_prompt >= 2 && num_prompt <= MAX_OUT);
  Tracked *t = &h->reqs[id];
  *t = (Tracked){.num_prompt = num_prompt, .max_tokens = max_tokens, .ignore_eos = ignore_eos};
  memcpy(t->prompt, prompt, (size_t)num_prompt * sizeof *prompt);
  EngineRequestParams p = {.prompt_ids = t->prompt,
                           .num_prompt_ids = (size_t)num_prompt,
                           .max_tokens = max_tokens,
                           .seed = id,
                           .ignore_eos = ignore_eos};
  char err[256];
  assert_true(sched_check_request(&h->s, &p, err, sizeof err));
  sched_add(&h->s, req_create(id, &p, h->config.block_size, h->window > 0));
}

// Adds request id with a prompt of num_prompt tokens starting with first (a stop directive when
// in 1 .. 999) and second, then the harness's shared prefix, then tokens of its own.
static void add_request(Harness *h, uint64_t id, int num_prompt, uint32_t first, uint32_t second,
                        int max_tokens, bool ignore_eos) {
  uint32_t prompt[MAX_OUT];
  assert_true(num_prompt >= 2 && num_prompt <= MAX_OUT);
  prompt[0] = first;
  prompt[1] = second;
  for (int i = 2; i < num_prompt; i++) {
    uint64_t v = i < h->shared_prefix_len ? (uint64_t)(31 * i) : id * 7919 + (uint64_t)i;
    prompt[i] = 1000 + (uint32_t)(v % 5000);
  }
  add_prompt(h, id, prompt, num_prompt, max_tokens, ignore_eos);
}

// Writes token t of b into the fake KV at slot (and the context hash through it, later).
static void fake_write(Harness *h, const Batch *b, int t, int64_t slot) {
  const int64_t num_slots = (int64_t)h->config.num_kv_blocks * h->config.block_size;
  assert_true(slot >= 0 && slot < num_slots);
  if (h->window > 0) assert_true(slot / h->config.block_size != BLOCK_NULL);  // stays zero
  h->kv_token[slot] = b->token_ids[t];
  h->kv_pos[slot] = b->positions[t];
}

// Runs a Batch: writes its KV (a hybrid pool's window group too), then samples one id per
// logits row.
static void fake_forward(Harness *h, const Batch *b, uint32_t *sampled) {
  const int bs = h->config.block_size;
  assert_true((h->window > 0) == (b->window_slot_mapping != NULL));
  for (int t = 0; t < b->num_tokens; t++) {
    assert_true(b->token_ids[t] != BATCH_PENDING_TOKEN);
    fake_write(h, b, t, b->slot_mapping[t]);
    if (h->window > 0) fake_write(h, b, t, b->window_slot_mapping[t]);
  }
  int row = 0;
  for (int s = 0; s < b->num_seqs; s++) {
    const int32_t *blocks = b->block_tables + (size_t)s * (size_t)b->max_blocks_per_seq;
    int end = b->query_start[s + 1];
    int first_new = b->seq_lens[s] - (end - b->query_start[s]);
    assert_true(end > b->query_start[s]);
    for (int t = b->query_start[s]; t < end; t++) {
      int pos = b->seq_lens[s] - (end - t);  // new tokens are the last of the sequence
      assert_int_equal(b->positions[t], pos);
      assert_int_equal(b->slot_mapping[t], (int64_t)blocks[pos / bs] * bs + pos % bs);
    }
    // Reads the whole context through the block table: old positions must hold the KV of this
    // very prefix; new ones record it. A hybrid pool's window group: the same for the positions
    // its first new token sees (window_first .. the end), through the window table.
    FakeContext c = {.h = 0xcbf29ce484222325ull};
    uint64_t ctx[MAX_OUT];
    assert_true(b->seq_lens[s] <= MAX_OUT);
    for (int pos = 0; pos < b->seq_lens[s]; pos++) {
      int64_t slot = (int64_t)blocks[pos / bs] * bs + pos % bs;
      assert_int_equal(h->kv_pos[slot], pos);
      context_add(&c, pos, h->kv_token[slot]);
      ctx[pos] = c.h;
      if (pos >= first_new)
        h->kv_ctx[slot] = c.h;
      else
        assert_true(h->kv_ctx[slot] == c.h);
    }
    const int32_t *window =
        h->window > 0 ? b->window_block_tables + (size_t)s * (size_t)b->max_blocks_per_seq : NULL;
    const int window_first = first_new - h->window + 1 > 0 ? first_new - h->window + 1 : 0;
    for (int pos = window_first; window && pos < b->seq_lens[s]; pos++) {
      int64_t slot = (int64_t)window[pos / bs] * bs + pos % bs;
      assert_true(window[pos / bs] != BLOCK_NULL && window[pos / bs] != blocks[pos / bs]);
      assert_int_equal(h->kv_pos[slot], pos);
      if (pos >= first_new) {
        assert_int_equal(b->window_slot_mapping[b->query_start[s] + pos - first_new], slot);
        h->kv_ctx[slot] = ctx[pos];
      } else {
        assert_true(h->kv_ctx[slot] == ctx[pos]);
      }
    }
    if (row == b->num_logits || b->logits_indices[row] != end - 1) continue;
    sampled[row++] = fake_next(&c, b->seq_lens[s]);
  }
  assert_int_equal(row, b->num_logits);
}

// Invariants of every plan: the budget, max_num_seqs, each request once, running requests before
// new admissions (which start at 0, or after their cached blocks), no admissions in a step that
// preempted, sample rows in order.
static void check_plan(const Harness *h, const SchedOutput *out) {
  assert_true(out->num_tokens <= h->config.max_num_batched_tokens);
  assert_true(out->num_entries <= h->config.max_num_seqs);
  assert_true(h->s.num_running <= h->config.max_num_seqs);
  int sum = 0, rows = 0;
  bool admitting = false;
  for (int i = 0; i < out->num_entries; i++) {
    const SchedEntry *e = &out->entries[i];
    assert_true(e->num_new_tokens > 0);
    sum += e->num_new_tokens;
    if (!h->was_running[e->req->id]) {
      admitting = true;
      assert_int_equal(e->start_pos, e->req->blocks.num_cached * h->config.block_size);
      if (!h->config.enable_prefix_caching) assert_int_equal(e->start_pos, 0);
    } else {
      assert_false(admitting);
    }
    if (e->sample_row >= 0) assert_int_equal(e->sample_row, rows++);
    for (int j = 0; j < i; j++) assert_ptr_not_equal(out->entries[j].req, e->req);
  }
  if (out->num_preempted > 0) assert_false(admitting);
  assert_int_equal(sum, out->num_tokens);
  assert_int_equal(rows, out->num_samples);
}

static void collect_events(Harness *h) {
  int n;
  const TokenEvent *ev = sched_take_events(&h->s, &n);
  for (int i = 0; i < n; i++) {
    Tracked *t = &h->reqs[ev[i].request_id];
    assert_int_equal(t->num_finishes, 0);  // nothing after the last event
    if (ev[i].has_token) {
      assert_true(t->num_tokens < MAX_OUT);
      t->tokens[t->num_tokens++] = ev[i].token_id;
    }
    assert_int_equal(ev[i].num_output_tokens, t->num_tokens);
    assert_int_equal(ev[i].num_prompt_tokens, t->num_prompt);
    if (ev[i].finish != FINISH_NONE) {
      t->finish = ev[i].finish;
      t->num_finishes++;
    }
  }
}

// One engine step: sync (schedule, run, update) or async (schedule and build N+1, patch it with
// N's samples, run it, then update N).
static void step(Harness *h) {
  int cur = h->next, prev = 1 - cur;
  SchedOutput *out = &h->outs[cur];
  memset(h->was_running, 0, sizeof h->was_running);
  for (int i = 0; i < h->s.running_len; i++)
    if (h->s.running[i]) h->was_running[h->s.running[i]->id] = true;
  sched_schedule(&h->s, out);
  check_plan(h, out);
  const Batch *b = out->num_entries > 0 ? batch_build(&h->builders[cur], out) : NULL;
  if (b && h->in_flight) {
    h->num_patches += h->builders[cur].num_patches;
    batch_patch_tokens(&h->builders[cur], h->sampled[prev]);
  }
  if (b) fake_forward(h, b, h->sampled[cur]);
  if (!h->config.async_scheduling) {
    sched_update(&h->s, out, h->sampled[cur]);
  } else {
    if (h->in_flight) sched_update(&h->s, &h->outs[prev], h->sampled[prev]);
    h->in_flight = true;
    h->next = prev;
  }
  collect_events(h);
  h->num_steps++;
}

static void run_all(Harness *h) {
  while (h->s.num_running + h->s.num_waiting > 0) {
    assert_true(h->num_steps < 100000);
    step(h);
  }
  if (h->in_flight) {
    sched_update(&h->s, &h->outs[1 - h->next], h->sampled[1 - h->next]);
    h->in_flight = false;
    collect_events(h);
  }
  assert_null(h->s.retired);
  assert_int_equal(blocks_num_used(&h->blocks), 0);
  for (int b = 0; b < h->blocks.num_blocks; b++) assert_int_equal(h->blocks.ref_count[b], 0);
}

// Every request first_id .. last_id produced exactly the reference tokens and finish reason.
static void check_reference(const Harness *h, int first_id, int last_id) {
  for (int id = first_id; id <= last_id; id++) {
    const Tracked *t = &h->reqs[id];
    uint32_t want[MAX_OUT];
    FinishReason finish;
    int n = reference(t->prompt, t->num_prompt, t->max_tokens, t->ignore_eos, want, &finish);
    assert_int_equal(t->num_finishes, 1);
    assert_int_equal(t->finish, finish);
    assert_int_equal(t->num_tokens, n);
    assert_memory_equal(t->tokens, want, (size_t)n * sizeof *want);
  }
}

// ---------------------------------------------------------------------------------------------
// Tests

static void test_budget_and_running_first(void **state) {
  (void)state;
  Harness *h = harness_new(16, 64, 32, 8, false);
  for (int id = 1; id <= 4; id++) add_request(h, (uint64_t)id, 20, 5000, 5000, 5, false);
  step(h);
  const SchedOutput *o = &h->outs[0];
  assert_int_equal(o->num_entries, 2);  // 20 + a 12-token chunk of the second
  assert_int_equal(o->entries[0].req->id, 1);
  assert_int_equal(o->entries[0].num_new_tokens, 20);
  assert_int_equal(o->entries[1].req->id, 2);
  assert_int_equal(o->entries[1].num_new_tokens, 12);
  assert_int_equal(o->entries[1].sample_row, -1);
  assert_int_equal(o->num_samples, 1);
  step(h);  // running first: 1's decode, 2's last 8; then 3 whole and a 3-token chunk of 4
  assert_int_equal(o->num_entries, 4);
  int want_id[] = {1, 2, 3, 4}, want_n[] = {1, 8, 20, 3}, want_start[] = {20, 12, 0, 0};
  for (int i = 0; i < 4; i++) {
    assert_int_equal(o->entries[i].req->id, want_id[i]);
    assert_int_equal(o->entries[i].num_new_tokens, want_n[i]);
    assert_int_equal(o->entries[i].start_pos, want_start[i]);
  }
  assert_int_equal(o->num_tokens, 32);
  assert_int_equal(o->num_samples, 3);
  run_all(h);
  check_reference(h, 1, 4);
  harness_free(h);
}

static void test_chunked_prefill(void **state) {
  (void)state;
  Harness *h = harness_new(16, 64, 32, 8, false);
  add_request(h, 1, 100, 5000, 5000, 6, false);
  const SchedOutput *o = &h->outs[0];
  int want[] = {32, 32, 32, 4};
  for (int i = 0; i < 4; i++) {
    step(h);
    assert_int_equal(o->num_entries, 1);
    assert_int_equal(o->entries[0].start_pos, 32 * i);
    assert_int_equal(o->entries[0].num_new_tokens, want[i]);
    assert_int_equal(o->num_samples, i == 3 ? 1 : 0);  // only the chunk reaching the end samples
    assert_int_equal(h->reqs[1].num_tokens, i == 3 ? 1 : 0);
  }
  for (int i = 0; i < 5; i++) {  // then decodes
    step(h);
    assert_int_equal(o->entries[0].num_new_tokens, 1);
    assert_int_equal(o->entries[0].start_pos, 100 + i);
  }
  assert_int_equal(h->s.num_running, 0);
  assert_int_equal(h->s.num_prompt_tokens, 100);
  assert_int_equal(h->s.num_generation_tokens, 6);
  run_all(h);
  check_reference(h, 1, 1);
  harness_free(h);
}

static void test_max_num_seqs(void **state) {
  (void)state;
  Harness *h = harness_new(16, 128, 64, 3, false);
  for (int id = 1; id <= 10; id++) add_request(h, (uint64_t)id, 10, 5000, 5000, 2 + id, false);
  step(h);
  assert_int_equal(h->s.num_running, 3);
  assert_int_equal(h->s.num_waiting, 7);
  assert_int_equal(h->outs[0].num_entries, 3);
  run_all(h);  // check_plan asserts num_running and entries <= 3 every step
  check_reference(h, 1, 10);
  harness_free(h);
}

// 10 blocks of 4 tokens; requests of 8 prompt + 12 output tokens (5 blocks each, at the end).
static void test_preemption_and_recompute(void **state) {
  (void)state;
  Harness *h = harness_new(4, 10, 64, 3, false);
  for (int id = 1; id <= 4; id++) add_request(h, (uint64_t)id, 8, 5000, 5000, 12, false);
  step(h);  // admits 1, 2, 3 (2 blocks each); 4 waits for a running slot
  assert_int_equal(blocks_num_used(&h->blocks), 6);
  const SchedOutput *o = &h->outs[0];
  while (o->num_preempted == 0) step(h);
  // Position 8 took a third block each (9); position 12 needs a fourth: 3, the most recently
  // admitted, is preempted to make room and goes back to the head of the queue, before 4.
  assert_int_equal(o->num_preempted, 1);
  assert_int_equal(o->preempted_ids[0], 3);
  assert_int_equal(o->num_entries, 2);
  const Request *r3 = h->s.waiting_head;
  assert_int_equal(r3->id, 3);
  assert_int_equal(r3->status, REQ_WAITING);
  assert_int_equal(r3->num_computed_tokens, 0);
  assert_int_equal(r3->blocks.num_blocks, 0);
  assert_int_equal(r3->next->id, 4);
  assert_int_equal(blocks_num_used(&h->blocks), 8);  // 1 and 2 hold 4 blocks each
  assert_int_equal(h->s.num_preemptions, 1);
  run_all(h);
  check_reference(h, 1, 4);  // the recomputed request's outputs equal an unconstrained run
  assert_true(h->s.num_prompt_tokens > 4 * 8);  // recomputation counted as prefill
  harness_free(h);
}

static void test_abort(void **state) {
  (void)state;
  Harness *h = harness_new(16, 64, 64, 2, false);
  for (int id = 1; id <= 3; id++) add_request(h, (uint64_t)id, 20, 5000, 5000, 8, false);
  step(h);  // 1 and 2 run (2 blocks each), 3 waits
  assert_int_equal(blocks_num_used(&h->blocks), 4);
  assert_true(sched_abort(&h->s, 3));  // waiting
  assert_int_equal(h->s.num_waiting, 0);
  assert_int_equal(blocks_num_used(&h->blocks), 4);
  assert_true(sched_abort(&h->s, 2));  // running: its blocks go back
  assert_int_equal(h->s.num_running, 1);
  assert_int_equal(blocks_num_used(&h->blocks), 2);
  assert_false(sched_abort(&h->s, 2));   // already finished
  assert_false(sched_abort(&h->s, 42));  // unknown
  int n;
  const TokenEvent *ev = sched_take_events(&h->s, &n);
  assert_int_equal(n, 2);
  assert_int_equal(ev[0].request_id, 3);
  assert_false(ev[0].has_token);
  assert_int_equal(ev[0].finish, FINISH_ABORT);
  assert_int_equal(ev[0].num_output_tokens, 0);
  assert_int_equal(ev[1].request_id, 2);
  assert_int_equal(ev[1].finish, FINISH_ABORT);
  assert_int_equal(ev[1].num_output_tokens, 1);  // the prefill's token was already out
  run_all(h);
  check_reference(h, 1, 1);
  harness_free(h);
}

// An abort between scheduling step N+1 and updating step N: both in-flight outputs are dropped.
static void test_abort_in_flight_async(void **state) {
  (void)state;
  Harness *h = harness_new(16, 64, 64, 4, true);
  add_request(h, 1, 10, 5000, 5000, 10, false);
  add_request(h, 2, 10, 5000, 5000, 10, false);
  step(h);
  step(h);
  step(h);  // 2 sits in the step in flight and in the one just updated
  int before = h->reqs[2].num_tokens;
  assert_true(sched_abort(&h->s, 2));
  assert_int_equal(blocks_num_used(&h->blocks), 1);
  assert_non_null(h->s.retired);  // kept until the step in flight is updated
  collect_events(h);
  assert_int_equal(h->reqs[2].finish, FINISH_ABORT);
  run_all(h);
  assert_int_equal(h->reqs[2].num_tokens, before);
  assert_int_equal(h->reqs[2].num_finishes, 1);
  check_reference(h, 1, 1);
  harness_free(h);
}

static void test_admission_refusals(void **state) {
  (void)state;
  EngineConfig c = {.max_num_batched_tokens = 64,
                    .max_num_seqs = 4,
                    .max_model_len = 200,
                    .block_size = 16,
                    .num_kv_blocks = 8};  // the cache holds 128 tokens
  BlockManager bm;
  blocks_init(&bm, c.num_kv_blocks, c.block_size, false);
  Scheduler s;
  sched_init(&s, &c, &bm);
  uint32_t prompt[256] = {0};
  EngineRequestParams p = {.prompt_ids = prompt, .num_prompt_ids = 100, .max_tokens = 28};
  char err[256] = "";
  assert_true(sched_check_request(&s, &p, err, sizeof err));
  p.max_tokens = 29;  // 129 tokens: 9 blocks, the cache has 8
  assert_false(sched_check_request(&s, &p, err, sizeof err));
  assert_non_null(strstr(err, "9 KV blocks"));
  p.num_prompt_ids = 201;  // longer than max_model_len
  p.max_tokens = 1;
  assert_false(sched_check_request(&s, &p, err, sizeof err));
  assert_non_null(strstr(err, "maximum context length is 200"));
  p.num_prompt_ids = 100;  // the prompt fits, prompt + max_tokens does not
  p.max_tokens = 101;
  assert_false(sched_check_request(&s, &p, err, sizeof err));
  assert_non_null(strstr(err, "201 tokens"));
  p.num_prompt_ids = 0;
  p.max_tokens = 1;
  assert_false(sched_check_request(&s, &p, err, sizeof err));
  assert_non_null(strstr(err, "empty"));
  p.num_prompt_ids = 5;
  p.max_tokens = 0;
  assert_false(sched_check_request(&s, &p, err, sizeof err));
  assert_non_null(strstr(err, "max_tokens"));
  sched_free(&s);
  blocks_free(&bm);
}

static void test_stop_ids_and_ignore_eos(void **state) {
  (void)state;
  Harness *h = harness_new(16, 64, 64, 8, false);
  // Context length 12 samples a stop id: the 8th output token of a 5-token prompt.
  for (int k = 0; k < 3; k++) add_request(h, (uint64_t)(1 + k), 5, 12, (uint32_t)k, 20, false);
  add_request(h, 4, 5, 12, 0, 20, true);
  run_all(h);
  for (int k = 0; k < 3; k++) {
    const Tracked *t = &h->reqs[1 + k];
    assert_int_equal(t->num_tokens, 8);
    assert_int_equal(t->tokens[7], STOP_IDS[k]);
    assert_int_equal(t->finish, FINISH_STOP);
  }
  assert_int_equal(h->reqs[4].num_tokens, 20);  // ignore_eos: the stop id is just a token
  assert_int_equal(h->reqs[4].tokens[7], TOK_RETURN);
  assert_int_equal(h->reqs[4].finish, FINISH_LENGTH);
  check_reference(h, 1, 4);
  harness_free(h);
}

// A mixed workload under a tight budget and a small cache (chunking and preemption), with a
// prompt prefix most requests share, in both modes, with and without prefix caching: the same
// tokens as the reference, hence as each other; every block free and unreferenced at the end
// (run_all).
typedef struct {
  uint64_t num_preemptions, prefix_cache_queries, prefix_cache_hits, sum_prompts;
  int num_patches;
} MixedRun;

// window > 0: over a hybrid pool for sliding layers of window keys.
static MixedRun run_mixed_pool(bool async, bool caching, int window) {
  Harness *h = harness_new_pool(4, 40, 24, 6, async, caching, window);
  h->shared_prefix_len = 14;
  uint64_t x = 99, sum_prompts = 0;
  for (int id = 1; id <= 40; id++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int num_prompt = 2 + (int)(x % 60);
    int max_tokens = 1 + (int)((x >> 8) % 40);
    bool stops = (x >> 16) % 4 == 0;
    uint32_t first = stops ? (uint32_t)(num_prompt + 1 + (x >> 20) % 30) : 5000;
    add_request(h, (uint64_t)id, num_prompt, first, stops ? (uint32_t)(x >> 24) : 5000, max_tokens,
                (x >> 28) % 5 == 0);
    sum_prompts += (uint64_t)num_prompt;
    if (id % 8 == 0)  // arrivals over time
      for (int i = 0; i < 5; i++) step(h);
  }
  run_all(h);
  check_reference(h, 1, 40);
  MixedRun r = {.num_preemptions = h->s.num_preemptions,
                .prefix_cache_queries = h->s.num_prefix_cache_queries,
                .prefix_cache_hits = h->s.num_prefix_cache_hits,
                .sum_prompts = sum_prompts,
                .num_patches = h->num_patches};
  harness_free(h);
  return r;
}

static MixedRun run_mixed(bool async, bool caching) { return run_mixed_pool(async, caching, 0); }

static void test_async_matches_sync(void **state) {
  (void)state;
  MixedRun sync = run_mixed(false, false), async = run_mixed(true, false);
  assert_true(sync.num_preemptions > 0 && async.num_preemptions > 0);  // preemption exercised
  assert_int_equal(sync.num_patches, 0);
  assert_true(async.num_patches > 100);  // decodes ran on tokens patched in from the step before
  assert_int_equal(sync.prefix_cache_queries + async.prefix_cache_queries, 0);  // caching off
}

// The same workload with prefix caching under memory pressure: outputs unchanged (run_mixed),
// hits found, and only first admissions counted: queries are exactly the prompts' tokens, even
// though preempted requests were admitted again (and hit their own blocks).
static void test_prefix_caching_under_preemption(void **state) {
  (void)state;
  for (int async = 0; async <= 1; async++) {
    MixedRun r = run_mixed(async, true);
    assert_true(r.num_preemptions > 0);
    assert_int_equal(r.prefix_cache_queries, r.sum_prompts);
    assert_true(r.prefix_cache_hits > 0 && r.prefix_cache_hits < r.prefix_cache_queries);
    assert_int_equal(r.prefix_cache_hits % 4, 0);  // whole blocks
  }
}

// The mixed workload over a hybrid pool (sliding layers of 6 keys, blocks of 4 tokens): in both
// modes, caching off and on, the same tokens as the reference; every step's window tables lead
// its first new token's window to the KV of the right positions and prefix (fake_forward), in
// blocks of their own; preemption and (caching on) hits exercised; all free at the end.
static void test_hybrid_pool(void **state) {
  (void)state;
  for (int mode = 0; mode < 4; mode++) {
    const bool async = mode & 1, caching = mode >> 1;
    MixedRun r = run_mixed_pool(async, caching, 6);
    assert_true(r.num_preemptions > 0);
    if (caching) assert_true(r.prefix_cache_hits > 0 && r.prefix_cache_hits % 4 == 0);
  }
}

// Aborts (running, waiting, and in async mode while a step naming them is in flight) under
// memory pressure with caching on: the others' outputs are unchanged, and at the end every
// block is free and unreferenced (run_all) while the cached ones keep their hashes.
static void test_prefix_cache_abort(void **state) {
  (void)state;
  for (int async = 0; async <= 1; async++) {
    Harness *h = harness_new_caching(4, 24, 32, 4, async, true);
    h->shared_prefix_len = 12;
    for (int id = 1; id <= 8; id++) add_request(h, (uint64_t)id, 20, 5000, 5000, 16, true);
    for (int i = 0; i < 6; i++) step(h);
    assert_true(h->s.num_running > 1 && h->s.num_waiting > 0);
    uint64_t running_id = h->s.running[1]->id, waiting_id = h->s.waiting_tail->id;
    assert_true(sched_abort(&h->s, running_id));
    assert_true(sched_abort(&h->s, waiting_id));
    run_all(h);
    assert_int_equal(h->reqs[running_id].finish, FINISH_ABORT);
    assert_int_equal(h->reqs[waiting_id].finish, FINISH_ABORT);
    for (int id = 1; id <= 8; id++)
      if ((uint64_t)id != running_id && (uint64_t)id != waiting_id) check_reference(h, id, id);
    assert_true(h->s.num_preemptions > 0 && h->s.num_prefix_cache_hits > 0);
    assert_true(h->blocks.num_cached > 0);
    harness_free(h);
  }
}

// Requests sent one after another, block size 16, all sharing a 40-token prefix: each hits the
// full blocks of the longest prefix some earlier request wrote, never its own last token.
static void test_prefix_cache_hit_arithmetic(void **state) {
  (void)state;
  for (int async = 0; async <= 1; async++) {
    Harness *h = harness_new_caching(16, 64, 256, 8, async, true);
    uint32_t a[64], b[64], other[64];  // a and b share their first 40 tokens
    for (int i = 0; i < 64; i++) {
      a[i] = i < 40 ? 5000 + (uint32_t)i : 7000 + (uint32_t)i;
      b[i] = i < 40 ? 5000 + (uint32_t)i : 8000 + (uint32_t)i;
      other[i] = 9000 + (uint32_t)i;
    }
    struct {
      const uint32_t *prompt;
      int len, want_hit;
    } seq[] = {
        {a, 50, 0},       // cold: writes the KV of 50 prompt + 5 output tokens: 3 full blocks
        {b, 45, 32},      // 40 shared tokens: a's 2 full blocks of them
        {other, 20, 0},   // nothing shared
        {a, 50, 48},      // a again: a's 3 full blocks (its 4th was never full)
        {a, 48, 32},      // exactly a's 3 blocks: the last token is computed, so 2 blocks hit
        {other, 20, 16},  // other again: its first block; the second was never full
    };
    enum { NUM_SEQ = sizeof seq / sizeof *seq };
    uint64_t want_queries = 0, want_hits = 0;
    for (int k = 0; k < NUM_SEQ; k++) {
      uint64_t id = (uint64_t)k + 1;
      add_prompt(h, id, seq[k].prompt, seq[k].len, 6, true);
      step(h);
      const SchedOutput *o = &h->outs[async ? 1 - h->next : 0];
      assert_int_equal(o->num_entries, 1);
      assert_int_equal(o->entries[0].start_pos, seq[k].want_hit);
      assert_int_equal(o->entries[0].num_new_tokens, seq[k].len - seq[k].want_hit);
      run_all(h);
      want_queries += (uint64_t)seq[k].len;
      want_hits += (uint64_t)seq[k].want_hit;
      assert_int_equal(h->s.num_prefix_cache_queries, want_queries);
      assert_int_equal(h->s.num_prefix_cache_hits, want_hits);
    }
    check_reference(h, 1, NUM_SEQ);
    EngineStats st = {0};
    sched_stats(&h->s, &st);
    assert_int_equal(st.prefix_cache_queries, 50 + 45 + 20 + 50 + 48 + 20);
    assert_int_equal(st.prefix_cache_hits, 32 + 48 + 32 + 16);
    assert_int_equal(st.num_prompt_tokens, 50 + 45 + 20 + 50 + 48 + 20);  // hits included
    assert_int_equal(st.num_kv_blocks_used, 0);
    harness_free(h);
  }
}

// Two requests with the same prompt admitted in the same step both compute it: a block is
// cached only after the step that writes it has run. A third one, later, hits.
static void test_prefix_cache_waits_for_written_kv(void **state) {
  (void)state;
  for (int async = 0; async <= 1; async++) {
    Harness *h = harness_new_caching(4, 64, 256, 8, async, true);
    uint32_t p[20];
    for (int i = 0; i < 20; i++) p[i] = 3000 + (uint32_t)i;
    add_prompt(h, 1, p, 20, 4, true);
    add_prompt(h, 2, p, 20, 4, true);
    step(h);
    const SchedOutput *o = &h->outs[async ? 1 - h->next : 0];
    assert_int_equal(o->num_entries, 2);
    assert_int_equal(o->entries[0].start_pos, 0);
    assert_int_equal(o->entries[1].start_pos, 0);
    // The step has not been updated yet in async mode; in sync mode it has: 5 blocks each.
    assert_int_equal(h->blocks.num_cached, async ? 0 : 10);
    add_prompt(h, 3, p, 20, 4, true);
    step(h);  // async: planned before step 1's update, so it may not hit; sync: 16 tokens hit
    const Request *r3 = req_table_get(&h->s.table, 3);
    assert_non_null(r3);
    assert_int_equal(r3->blocks.num_cached * 4 > 0, !async);
    run_all(h);
    check_reference(h, 1, 3);
    assert_int_equal(h->s.num_prefix_cache_hits, async ? 0 : 16);
    harness_free(h);
  }
}

// A request that stops at step N already sits in step N+1: that output is dropped.
static void test_async_finished_request_skipped(void **state) {
  (void)state;
  Harness *h = harness_new(16, 16, 64, 4, true);
  add_request(h, 1, 4, 5, 0, 10, false);  // samples a token, then a stop id at context 5
  step(h);                                // 1: prefill
  step(h);                                // 2: decode on step 1's token (patched)
  assert_int_equal(h->outs[1].entries[0].prev_sample_row, 0);
  step(h);  // 3: decode on step 2's token (wasted: it is the stop id); update 2 finishes it
  assert_int_equal(h->outs[0].num_entries, 1);
  assert_int_equal(h->reqs[1].num_tokens, 2);
  assert_int_equal(h->reqs[1].finish, FINISH_STOP);
  assert_non_null(h->s.retired);  // step 3 still names it
  assert_int_equal(h->s.num_running, 0);
  assert_int_equal(blocks_num_used(&h->blocks), 0);
  run_all(h);  // update 3: its output for the finished request is dropped, then it is freed
  assert_int_equal(h->num_steps, 3);
  assert_int_equal(h->reqs[1].num_tokens, 2);
  assert_int_equal(h->reqs[1].num_finishes, 1);
  check_reference(h, 1, 1);
  harness_free(h);
}

// A request whose steps in flight already reach max_tokens is not scheduled again.
static void test_async_no_step_past_max_tokens(void **state) {
  (void)state;
  Harness *h = harness_new(16, 16, 64, 4, true);
  add_request(h, 1, 4, 5000, 0, 2, true);
  step(h);  // prefill samples output 1
  step(h);  // decode samples output 2 = max_tokens
  assert_int_equal(h->outs[1].num_entries, 1);
  step(h);  // nothing to schedule
  assert_int_equal(h->outs[0].num_entries, 0);
  run_all(h);
  assert_int_equal(h->num_steps, 3);
  check_reference(h, 1, 1);
  harness_free(h);
}

// The Batch arrays of two small steps, by hand: block size 4, budget 8.
static void test_batch_builder_by_hand(void **state) {
  (void)state;
  for (int async = 0; async <= 1; async++) {
    Harness *h = harness_new(4, 8, 8, 4, async);
    Request *a = NULL, *b = NULL;
    uint32_t pa[] = {10, 11, 12, 13, 14, 15}, pb[] = {20, 21, 22};
    EngineRequestParams p = {.prompt_ids = pa, .num_prompt_ids = 6, .max_tokens = 4};
    sched_add(&h->s, a = req_create(1, &p, 4, false));
    p.prompt_ids = pb, p.num_prompt_ids = 3;
    sched_add(&h->s, b = req_create(2, &p, 4, false));
    SchedOutput *o = &h->outs[0];
    sched_schedule(&h->s, o);
    const Batch *bt = batch_build(&h->builders[0], o);
    // a: 6 tokens in blocks 0, 1; b: a 2-token chunk in block 2
    uint32_t ids1[] = {10, 11, 12, 13, 14, 15, 20, 21};
    int32_t pos1[] = {0, 1, 2, 3, 4, 5, 0, 1};
    int64_t slots1[] = {0, 1, 2, 3, 4, 5, 8, 9};
    assert_int_equal(bt->num_seqs, 2);
    assert_int_equal(bt->num_tokens, 8);
    assert_memory_equal(bt->token_ids, ids1, sizeof ids1);
    assert_memory_equal(bt->positions, pos1, sizeof pos1);
    assert_memory_equal(bt->slot_mapping, slots1, sizeof slots1);
    assert_int_equal(bt->query_start[0], 0);
    assert_int_equal(bt->query_start[1], 6);
    assert_int_equal(bt->query_start[2], 8);
    assert_int_equal(bt->seq_lens[0], 6);
    assert_int_equal(bt->seq_lens[1], 2);
    assert_int_equal(bt->max_blocks_per_seq, 2);
    assert_int_equal(bt->block_tables[0], 0);
    assert_int_equal(bt->block_tables[1], 1);
    assert_int_equal(bt->block_tables[2], 2);
    assert_int_equal(bt->num_logits, 1);  // b's chunk samples nothing
    assert_int_equal(bt->logits_indices[0], 5);
    uint32_t sampled1[] = {99};
    if (!async) sched_update(&h->s, o, sampled1);
    SchedOutput *o2 = &h->outs[1];
    sched_schedule(&h->s, o2);
    bt = batch_build(&h->builders[1], o2);
    // a decodes its sampled token at position 6 (block 1); b's last prompt token at position 2
    int32_t pos2[] = {6, 2};
    int64_t slots2[] = {6, 10};
    assert_int_equal(bt->num_tokens, 2);
    assert_memory_equal(bt->positions, pos2, sizeof pos2);
    assert_memory_equal(bt->slot_mapping, slots2, sizeof slots2);
    assert_int_equal(bt->token_ids[1], 22);
    assert_int_equal(bt->query_start[1], 1);
    assert_int_equal(bt->query_start[2], 2);
    assert_int_equal(bt->seq_lens[0], 7);
    assert_int_equal(bt->seq_lens[1], 3);
    assert_int_equal(bt->num_logits, 2);
    assert_int_equal(bt->logits_indices[0], 0);
    assert_int_equal(bt->logits_indices[1], 1);
    if (async) {  // a's input is step 1's sample: a marker and a patch, filled in by the engine
      assert_int_equal(bt->token_ids[0], BATCH_PENDING_TOKEN);
      assert_int_equal(h->builders[1].num_patches, 1);
      assert_int_equal(h->builders[1].patch_token_index[0], 0);
      assert_int_equal(h->builders[1].patch_sample_row[0], 0);
      assert_int_equal(a->num_output_placeholders, 2);
      batch_patch_tokens(&h->builders[1], sampled1);
      sched_update(&h->s, o, sampled1);
      assert_int_equal(a->num_output_placeholders, 1);
    } else {
      assert_int_equal(h->builders[1].num_patches, 0);
    }
    assert_int_equal(bt->token_ids[0], 99);
    assert_int_equal(a->token_ids[6], 99);
    assert_int_equal(b->num_computed_tokens, 3);
    uint32_t sampled2[] = {100, 101};
    sched_update(&h->s, o2, sampled2);
    assert_int_equal(a->num_tokens, 8);
    assert_int_equal(b->num_tokens, 4);
    assert_int_equal(b->token_ids[3], 101);
    harness_free(h);
  }
}

static void test_abort_all_and_stats(void **state) {
  (void)state;
  Harness *h = harness_new(16, 64, 32, 2, false);
  for (int id = 1; id <= 3; id++) add_request(h, (uint64_t)id, 20, 5000, 5000, 8, false);
  step(h);
  EngineStats st = {0};
  sched_stats(&h->s, &st);
  assert_int_equal(st.num_running, 2);
  assert_int_equal(st.num_waiting, 1);
  assert_int_equal(st.num_kv_blocks_used, 3);  // 20 tokens (2 blocks) + a 12-token chunk
  assert_int_equal(st.num_kv_blocks, 64);
  assert_int_equal(st.num_prompt_tokens, 32);
  assert_int_equal(st.num_generation_tokens, 1);
  sched_abort_all(&h->s);
  collect_events(h);
  for (int id = 1; id <= 3; id++) assert_int_equal(h->reqs[id].finish, FINISH_ABORT);
  sched_stats(&h->s, &st);
  assert_int_equal(st.num_running + st.num_waiting + st.num_kv_blocks_used, 0);
  harness_free(h);
}

static void test_request_table(void **state) {
  (void)state;
  enum { N = 1000 };
  RequestTable t;
  req_table_init(&t);
  static Request reqs[N];
  for (int i = 0; i < N; i++) {
    reqs[i].id = (uint64_t)(i + 1) * 64;  // ids sharing low bits
    req_table_put(&t, &reqs[i]);
  }
  for (int i = 0; i < N; i++) assert_ptr_equal(req_table_get(&t, reqs[i].id), &reqs[i]);
  assert_null(req_table_get(&t, 1));
  assert_null(req_table_get(&t, 0));
  for (int i = 0; i < N; i += 3) req_table_remove(&t, reqs[i].id);
  req_table_remove(&t, 12345);
  for (int i = 0; i < N; i++)
    assert_ptr_equal(req_table_get(&t, reqs[i].id), i % 3 == 0 ? NULL : &reqs[i]);
  assert_int_equal(t.num_requests, N - (N + 2) / 3);
  for (int i = 0; i < N; i++) req_table_remove(&t, reqs[i].id);
  assert_int_equal(t.num_requests, 0);
  for (int i = 0; i < t.capacity; i++) assert_int_equal(t.ids[i], 0);
  req_table_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_budget_and_running_first),
      cmocka_unit_test(test_chunked_prefill),
      cmocka_unit_test(test_max_num_seqs),
      cmocka_unit_test(test_preemption_and_recompute),
      cmocka_unit_test(test_abort),
      cmocka_unit_test(test_abort_in_flight_async),
      cmocka_unit_test(test_admission_refusals),
      cmocka_unit_test(test_stop_ids_and_ignore_eos),
      cmocka_unit_test(test_async_matches_sync),
      cmocka_unit_test(test_prefix_caching_under_preemption),
      cmocka_unit_test(test_hybrid_pool),
      cmocka_unit_test(test_prefix_cache_abort),
      cmocka_unit_test(test_prefix_cache_hit_arithmetic),
      cmocka_unit_test(test_prefix_cache_waits_for_written_kv),
      cmocka_unit_test(test_async_finished_request_skipped),
      cmocka_unit_test(test_async_no_step_past_max_tokens),
      cmocka_unit_test(test_batch_builder_by_hand),
      cmocka_unit_test(test_abort_all_and_stats),
      cmocka_unit_test(test_request_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
