// shard.c: the tensor- and pipeline-parallel split of GPT-OSS (shard.h): the divisibility checks
// and each rank's ranges.
#include "model/shard.h"

#include <stdio.h>

Shard shard_whole(const GptOssConfig *c) { return shard_of(c, 1, 1, 0, 0); }

// The divisors of n up to limit, "1, 2, 4" style, for messages.
static void divisors(int n, int limit, char *out, size_t out_size) {
  size_t used = 0;
  out[0] = '\0';
  for (int d = 1; d <= n && d <= limit && used < out_size; d++)
    if (n % d == 0)
      used += (size_t)snprintf(out + used, out_size - used, "%s%d", used ? ", " : "", d);
}

bool shard_check(const GptOssConfig *c, int tp, int pp, char *err, size_t err_size) {
  char ok[128];
  if (tp < 1 || pp < 1) {
    snprintf(err, err_size, "tensor and pipeline parallel sizes must be at least 1 (got %d and %d)",
             tp, pp);
    return false;
  }
  const struct {
    int count;
    const char *what;
  } split[] = {{c->num_heads, "query heads"},
               {c->num_experts, "experts"},
               {c->vocab_size, "vocabulary rows"}};
  for (size_t i = 0; i < sizeof split / sizeof *split; i++) {
    if (split[i].count % tp == 0) continue;
    divisors(c->num_heads, 64, ok, sizeof ok);
    snprintf(err, err_size,
             "-tp %d does not divide the model's %d %s; tensor parallel sizes that divide the "
             "query heads (%d): %s",
             tp, split[i].count, split[i].what, c->num_heads, ok);
    return false;
  }
  if (c->num_kv_heads % tp != 0 && tp % c->num_kv_heads != 0) {
    snprintf(err, err_size,
             "-tp %d neither divides the model's %d KV heads nor is a multiple of them", tp,
             c->num_kv_heads);
    return false;
  }
  if (pp > c->num_layers) {
    snprintf(err, err_size, "-pp %d is more stages than the model's %d layers", pp,
             c->num_layers);
    return false;
  }
  return true;
}

// Run i of n near-equal runs over count items, the first count % n runs one longer.
static void split_range(int count, int n, int i, int *begin, int *end) {
  const int base = count / n, extra = count % n;
  *begin = i * base + (i < extra ? i : extra);
  *end = *begin + base + (i < extra ? 1 : 0);
}

Shard shard_of(const GptOssConfig *c, int tp, int pp, int tp_rank, int pp_rank) {
  Shard s = {.tp_rank = tp_rank, .tp_size = tp, .pp_rank = pp_rank, .pp_size = pp};
  split_range(c->num_layers, pp, pp_rank, &s.layer_begin, &s.layer_end);
  s.num_heads = c->num_heads / tp;
  s.head_begin = tp_rank * s.num_heads;
  const int group = c->num_heads / c->num_kv_heads;  // query heads per KV head
  if (tp <= c->num_kv_heads) {
    s.num_kv_heads = c->num_kv_heads / tp;
    s.kv_head_begin = tp_rank * s.num_kv_heads;
  } else {
    s.num_kv_heads = 1;
    s.kv_head_begin = s.head_begin / group;
  }
  split_range(c->num_experts, tp, tp_rank, &s.expert_begin, &s.expert_end);
  split_range(c->vocab_size, tp, tp_rank, &s.vocab_begin, &s.vocab_end);
  return s;
}
