// sampler_process.c: what happens to a row of logits before a token is drawn from it, as in
// vLLM's v1 sampler (logit bias and min_tokens as built-in logits processors, then
// apply_penalties), and the raw log-probabilities it reports. Touches only the ids the request
// names (its prompt, its output, its bias and stop ids), through a vocabulary-sized count array
// that is all zero between calls; the only O(vocab) work is the logprobs, when asked for.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "core/sampler.h"

static bool has_penalties(const SamplingParams *p) {
  bool repetition = p->repetition_penalty > 0 && p->repetition_penalty != 1;
  return repetition || p->presence_penalty != 0 || p->frequency_penalty != 0;
}

bool sampler_needs_processing(const SamplingParams *p, const SamplerInputs *in) {
  bool min_tokens =
      in->num_generated < (size_t)(p->min_tokens > 0 ? p->min_tokens : 0) && in->num_stop_ids > 0;
  return in->num_bias > 0 || min_tokens || has_penalties(p);
}

static void reserve_vocab(SamplerScratch *s, size_t n) {
  if (n <= s->vocab_cap) return;
  free(s->counts);
  free(s->raw);
  s->counts = xcalloc(n, sizeof *s->counts);
  s->raw = xmalloc(n * sizeof *s->raw);
  s->vocab_cap = n;
}

// Divides the positive logits of tokens seen in the prompt or the output by penalty and
// multiplies the negative ones, once per distinct token.
static void repetition(float *logits, float penalty, const uint32_t *ids, size_t n,
                       uint32_t *seen) {
  for (size_t i = 0; i < n; i++) {
    uint32_t t = ids[i];
    if (seen[t]) continue;
    seen[t] = 1;
    logits[t] = logits[t] > 0 ? logits[t] / penalty : logits[t] * penalty;
  }
}

static void clear(uint32_t *counts, const uint32_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++) counts[ids[i]] = 0;
}

void sampler_process(float *logits, int vocab_size, const SamplingParams *p,
                     const SamplerInputs *in, SamplerScratch *s) {
  for (size_t i = 0; i < in->num_bias; i++) logits[in->bias[i].token_id] += in->bias[i].bias;
  if (in->num_generated < (size_t)(p->min_tokens > 0 ? p->min_tokens : 0))
    for (size_t i = 0; i < in->num_stop_ids; i++)  // a model may lack a harmony stop id
      if (in->stop_ids[i] < (uint32_t)vocab_size) logits[in->stop_ids[i]] = -INFINITY;
  if (!has_penalties(p)) return;
  reserve_vocab(s, (size_t)vocab_size);
  const uint32_t *out = in->output_ids;
  size_t n = in->output_ids ? in->num_generated : 0;
  if (p->repetition_penalty > 0 && p->repetition_penalty != 1) {
    repetition(logits, p->repetition_penalty, in->prompt_ids, in->num_prompt_ids, s->counts);
    repetition(logits, p->repetition_penalty, out, n, s->counts);
    clear(s->counts, in->prompt_ids, in->num_prompt_ids);
    clear(s->counts, out, n);
  }
  if (p->presence_penalty == 0 && p->frequency_penalty == 0) return;
  for (size_t i = 0; i < n; i++) s->counts[out[i]]++;
  for (size_t i = 0; i < n; i++) {
    uint32_t t = out[i];
    if (!s->counts[t]) continue;  // done at its first occurrence
    logits[t] -= p->frequency_penalty * (float)s->counts[t] + p->presence_penalty;
    s->counts[t] = 0;
  }
}

const float *sampler_keep_raw(const float *logits, int vocab_size, SamplerScratch *s) {
  reserve_vocab(s, (size_t)vocab_size);
  memcpy(s->raw, logits, (size_t)vocab_size * sizeof *logits);
  return s->raw;
}
