// backend.h: the one table of operations the forward pass calls, so a CPU and a CUDA backend can
// each implement them without the model code knowing which runs. Buffers are the backend's
// (host memory on CPU, device memory on CUDA); shapes are in the comments. No op allocates per
// call beyond its backend's scratch.
#ifndef GE_BACKEND_BACKEND_H
#define GE_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "common/pick.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/rope.h"
#include "model/weights.h"

typedef struct Backend Backend;

typedef struct {
  const float *q;  // [num_tokens, q_stride] query heads (rotated), head-major in each row
  int q_stride;    // floats between consecutive tokens' q
  const KvCache *kv;
  int layer;
  const float *sinks;  // [num_heads] one logit per query head, unscaled, no value; finite (the
                       // CUDA tensor-core decode kernel starts its running max there)
  const Batch *batch;
  int num_heads;
  int num_kv_heads;  // query head h reads kv head h / (num_heads / num_kv_heads)
  int head_dim;
  int sliding_window;  // > 0: key j is visible to query i only if i - j < sliding_window
  float scale;         // applied to q.k (not to the sink)
  float *out;          // [num_tokens, num_heads * head_dim]
} AttentionArgs;

// Router diagnostics for one MoE call (`gptoss-engine generate --route-margins-out`,
// `--flip-route`: telling a routing near-tie from a bug when two engines part).
typedef struct {
  float *margins;  // NULL, or host [num_tokens]: the k-th largest router logit minus the (k+1)-th
  int flip_token;  // -1, or the token that takes its (k+1)-th expert in place of its k-th
} MoeProbe;

typedef struct {
  const GptOssConfig *config;
  const LayerWeights *layer;
  const float *x;  // [num_tokens, hidden] the normalised input
  int num_tokens;
  // The experts this rank holds (expert parallelism, model/shard.h): layer->mlp1[i], mlp2[i] and
  // their biases are expert expert_begin + i. The router still scores all experts; a token's
  // picks outside [expert_begin, expert_end) add nothing here (another rank adds them).
  int expert_begin, expert_end;
  float *residual;        // [num_tokens, hidden] the MoE output is added here
  const MoeProbe *probe;  // NULL, or diagnostics (host-memory backends only)
} MoeArgs;

// How a device samples one row of logits (the op sample below).
typedef struct {
  float temperature;     // 0: greedy; > 0: the draw below over softmax(logits / temperature),
                         // restricted to the kept set of top_k and top_p (common/pick.h, pick_top);
                         // < 0: not on the device (the host samples the row)
  int top_k;             // <= 0 or >= the vocabulary: every id
  float top_p;           // (0, 1]; 1: every id
  double draw;           // uniform in [0, 1): the request's next draw (core/sampler.h)
  bool logprobs;         // also the row's logprobs (common/pick.h, pick_logprobs): the sampled
  int num_top_logprobs;  // id's and this many of the most probable (<= PICK_MAX_LOGPROBS)
} SampleRow;

struct Backend {
  const char *name;
  void *state;       // the backend's own (thread pool, scratch, handles)
  bool host_memory;  // alloc returns host memory: the host may read op outputs directly

  // out[t] = table row ids[t], as float.                        out: [num_tokens, cols]
  void (*embed)(Backend *be, const WeightMatrix *table, const uint32_t *ids, int num_tokens,
                float *out);
  // out = x / sqrt(mean(x^2) + eps) * scale, per row (out may be x).  x, out: [num_rows, dim]
  void (*rmsnorm)(Backend *be, const float *x, const float *scale, int num_rows, int dim,
                  float *out);
  // y = x W^T + bias (bias may be NULL); with accumulate, y += that.
  // x: [num_rows, w->cols], y: [num_rows, w->rows]
  void (*linear)(Backend *be, const WeightMatrix *w, const float *bias, const float *x,
                 int num_rows, float *y, bool accumulate);
  // Rotates num_heads heads of each row in place at that row's position (YaRN, half-split).
  // x: [num_rows, row_stride], heads at x[row * row_stride + h * head_dim]
  void (*rope)(Backend *be, float *x, int num_rows, int row_stride, int num_heads, int head_dim,
               const int32_t *positions, const RopeTable *rope);
  // Writes each token's k and v into its slot of layer's cache; a negative slot (padding) is
  // skipped. k, v: [num_tokens, stride] with num_kv_heads * head_dim values at the row start
  void (*kv_write)(Backend *be, KvCache *kv, int layer, const float *k, const float *v, int stride,
                   const int64_t *slot_mapping, int num_tokens);
  // Paged causal attention with sinks over each sequence's cached keys: the key at position j of
  // sequence s is in slot block_tables[s][j / block_size] * block_size + j % block_size, and the
  // query at positions[t] (< seq_lens[s]) sees keys 0 .. positions[t], the last sliding_window
  // of them when that is > 0. The batch's own K/V must have been written (kv_write) first.
  void (*attention)(Backend *be, const AttentionArgs *a);
  // Router (linear + bias, top-k, softmax over the k), experts grouped by expert (SwiGLU with
  // clamp, alpha and +1), weighted sum added to the residual.
  void (*moe)(Backend *be, const MoeArgs *a);
  // out[r] = in[rows[r]] for r < num_rows.                      in, out: [*, dim]
  void (*gather_rows)(Backend *be, const float *in, const int32_t *rows, int num_rows, int dim,
                      float *out);
  // dst[i] += src[i].                                           dst, src: [n]
  void (*add)(Backend *be, float *dst, const float *src, size_t n);
  // num_rows rows of row_bytes bytes from src (rows src_stride bytes apart) to dst (rows
  // dst_stride bytes apart), both backend memory, not overlapping.
  void (*copy_rows)(Backend *be, void *dst, size_t dst_stride, const void *src, size_t src_stride,
                    size_t row_bytes, int num_rows);
  // bytes zero bytes at ptr.
  void (*zero)(Backend *be, void *ptr, size_t bytes);

  // The batch as the ops read it: a backend whose memory is not the host's copies the index
  // arrays (token_ids, positions, slot_mapping, query_start, seq_lens, block_tables,
  // logits_indices) into its own and returns a Batch pointing there, valid until the next call;
  // the CPU returns host itself. The forward pass calls it once per call and hands every op
  // the result.
  const Batch *(*upload_batch)(Backend *be, const Batch *host);

  // Optional, all six or none (NULL: no graphs): recorded forward passes, replayed by one
  // launch (CUDA graphs; dist/runner_graphs.c records one per decode batch size and rank).
  // upload_graph_batch is upload_batch for a batch of one new token a sequence (num_tokens ==
  // num_seqs == num_logits <= max_seqs, max_blocks_per_seq <= max_blocks), at device addresses
  // that depend only on max_seqs and max_blocks, which every call of a backend must pass alike:
  // the result's max_blocks_per_seq is max_blocks (its tables' row stride), so ops recorded over
  // one result replay over any later one of the same num_seqs.
  const Batch *(*upload_graph_batch)(Backend *be, const Batch *host, int max_seqs, int max_blocks);
  // graph_begin: the ops called after it (on this thread) are recorded, not run, until
  // graph_end, which returns the recording ready to launch. Both false / NULL with a message
  // when the backend cannot record now. Every buffer a recorded op touches must be the same
  // when it is launched (nothing may be freed or grown in between: the ops' own scratch is
  // checked by graph_current, the caller's buffers are the caller's to keep).
  bool (*graph_begin)(Backend *be, char *err, size_t err_size);
  void *(*graph_end)(Backend *be, char *err, size_t err_size);
  // Whether a recording may still launch: false once the backend's scratch has grown since it
  // was recorded (the caller runs the ops itself, and should record again or drop its
  // recordings). Only reads the backend's state: any thread may ask while none of its ops runs.
  bool (*graph_current)(const Backend *be, const void *graph);
  // Runs a current recording's ops, in order after the ops before it, like any op.
  void (*graph_launch)(Backend *be, void *graph);
  void (*graph_free)(Backend *be, void *graph);

  // Optional (NULL: none): the backend's queue of device work (CUDA: its cudaStream_t), for a
  // communicator that runs its transfers in order with the ops (dist/comm_nccl.h).
  void *(*device_queue)(Backend *be);

  // Optional (NULL: the host samples every row). The token of each row of logits
  // [num_rows, vocab] (backend memory) by rows[i] into host ids[i] (-1 for a row whose
  // temperature is < 0): greedy is the argmax, lowest id on ties (NaNs aside); a temperature t
  // takes the first id, in id order, at which the running sum of exp((logit - max) / t) passes
  // draw times the row's total, or with top-k / top-p the first in the kept set's order
  // (common/pick.h, pick_top): core/sampler.h's sampler_sample_drawn, up to the order and units
  // of the sums (the CPU's picks through common/pick.h as the host does, so its ids are the
  // host's exactly).
  // Rows that ask for logprobs get them in host logprobs[i] (logprobs may be NULL when none
  // does), the values of the raw row's log-softmax (the CPU's: pick_logprobs itself).
  void (*sample)(Backend *be, const float *logits, int num_rows, int vocab, const SampleRow *rows,
                 int32_t *ids, PickLogprobs *logprobs);
  // Copies bytes of backend memory to the host (a memcpy on the CPU).
  void (*to_host)(Backend *be, void *dst, const void *src, size_t bytes);

  // The weights as the ops read them, for a backend whose memory is not the host's: copies host
  // (any shard) into the backend's memory as a GptOssWeights of the same shapes; free it with
  // free_weights, never weights_free. NULL on the CPU, whose ops read host weights as they are.
  bool (*upload_weights)(Backend *be, const GptOssWeights *host, GptOssWeights *device, char *err,
                         size_t err_size);
  // Optional (NULL: generate on the host, then upload_weights): dummy weights (weights_dummy.h)
  // for config c and o's shard, formats and seed, generated in the backend's memory as the same
  // GptOssWeights upload_weights would give for weights_load's; free with free_weights. Takes
  // MXFP4 experts only (the runner asks for nothing else).
  bool (*load_dummy_weights)(Backend *be, const GptOssConfig *c, const WeightsOptions *o,
                             GptOssWeights *device, char *err, size_t err_size);
  void (*free_weights)(Backend *be, GptOssWeights *device);

  void *(*alloc)(Backend *be, size_t bytes);  // zeroed; NULL when out of memory
  void (*free)(Backend *be, void *ptr);
  void (*destroy)(Backend *be);
};

#endif
