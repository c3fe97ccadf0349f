// weights.c: weights_load from a checkpoint folder or as dummy weights, the conversion of each
// checkpoint tensor into the kept format, weights_plan and weights_free (see weights.h). Owns
// every buffer and file mapping the weights point into; computes nothing of the model itself.
#include "model/weights.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>

#include "common/check.h"
#include "model/bf16.h"
#include "model/checkpoint.h"
#include "model/mxfp4.h"
#include "model/q8.h"
#include "model/safetensors.h"
#include "model/weights_dummy.h"
#include "model/weights_slice.h"

// What GptOssWeights.owned points at.
typedef struct {
  void **allocs;  // [num_allocs] buffers the weights point into
  int num_allocs, cap_allocs;
  StSet files;            // the checkpoint's mappings (none for dummy weights)
  LayerWeights *layers;   // [the shard's layers]
  WeightMatrix *experts;  // [the shard's layers, 2, its experts]: a layer's mlp1, then its mlp2
} WeightsOwned;

typedef struct {
  const GptOssConfig *config;
  const WeightsOptions *options;
  const Shard *shard;
  WeightsOwned *owned;
  bool dummy;       // generate every tensor; else read owned->files
  const char *dir;  // the checkpoint folder, for messages
  char *err;
  size_t err_size;
} Loader;

// One checkpoint tensor's bytes: inside a file mapping, or generated (then owned by generated).
typedef struct {
  CheckpointTensor spec;
  const void *data;  // spec.num_elements values of dtype
  StDtype dtype;
  void *generated;
} Source;

static const char *const FORMAT_NAMES[] = {
    [WEIGHT_F32] = "f32", [WEIGHT_BF16] = "bf16", [WEIGHT_MXFP4] = "mxfp4", [WEIGHT_Q8] = "q8"};

const char *weight_format_name(WeightFormat f) {
  return f >= 0 && f < (int)(sizeof FORMAT_NAMES / sizeof *FORMAT_NAMES) ? FORMAT_NAMES[f] : "?";
}

bool weight_format_from_name(const char *name, WeightFormat *out) {
  for (int f = 0; f < (int)(sizeof FORMAT_NAMES / sizeof *FORMAT_NAMES); f++) {
    if (strcmp(name, FORMAT_NAMES[f]) == 0) {
      *out = (WeightFormat)f;
      return true;
    }
  }
  return false;
}

static size_t format_size(WeightFormat f) { return f == WEIGHT_F32 ? sizeof(float) : 2; }

bool weights_load_format_from_name(const char *name, LoadFormat *out) {
  static const char *const NAMES[] = {
      [LOAD_AUTO] = "auto", [LOAD_SAFETENSORS] = "safetensors", [LOAD_DUMMY] = "dummy"};
  for (int f = 0; f < (int)(sizeof NAMES / sizeof *NAMES); f++) {
    if (strcmp(name, NAMES[f]) == 0) {
      *out = (LoadFormat)f;
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Sizes

static bool role_is_matrix(CheckpointRole r) {
  return r == CKPT_EMBEDDING || r == CKPT_UNEMBEDDING || r == CKPT_QKV_WEIGHT ||
         r == CKPT_OUT_WEIGHT || r == CKPT_GATE_WEIGHT;
}

// The format a dense matrix is kept in: q8 is for the unembedding alone (at GPT-OSS's
// vocabulary it is most of a token's multiply-adds and, at batch 1, of the bytes read); the
// others stay bf16 then (exact from the checkpoint): 8-bit qkv weights moved a golden fixture's
// logits by 19% (docs/PERF.md), and they are a small share of the time.
WeightFormat weights_dense_format(CheckpointRole r, const WeightsOptions *o) {
  if (o->dense_format == WEIGHT_Q8 && r != CKPT_UNEMBEDDING) return WEIGHT_BF16;
  return o->dense_format;
}

static bool role_is_scales(CheckpointRole r) {
  return r == CKPT_MLP1_SCALES || r == CKPT_MLP2_SCALES;
}

// Bytes tensor t takes once kept in o's formats.
static int64_t kept_bytes(const CheckpointTensor *t, const WeightsOptions *o) {
  if (checkpoint_role_is_mxfp4(t->role)) {
    if (o->expert_format == WEIGHT_MXFP4) return t->num_bytes;
    return role_is_scales(t->role) ? 0 : t->num_params * (int64_t)format_size(o->expert_format);
  }
  if (role_is_matrix(t->role)) {
    const WeightFormat f = weights_dense_format(t->role, o);
    if (f == WEIGHT_Q8)
      return (int64_t)(q8_data_bytes(t->shape[0], t->shape[1]) +
                       q8_num_scales(t->shape[0]) * sizeof(float));
    return t->num_elements * (int64_t)format_size(f);
  }
  return t->num_elements * (int64_t)sizeof(float);
}

void weights_plan(const GptOssConfig *c, const WeightsOptions *o, WeightsPlan *p) {
  *p = (WeightsPlan){.num_tensors = checkpoint_num_tensors(c)};
  for (int i = 0; i < p->num_tensors; i++) {
    CheckpointTensor t;
    checkpoint_tensor(c, i, &t);
    p->num_params += t.num_params;
    p->loaded_bytes += kept_bytes(&t, o);
    if (!checkpoint_role_is_mxfp4(t.role))
      p->bf16_bytes += t.num_bytes;
    else if (role_is_scales(t.role))
      p->scale_bytes += t.num_bytes;
    else
      p->fp4_block_bytes += t.num_bytes;
  }
  p->checkpoint_bytes = p->bf16_bytes + p->fp4_block_bytes + p->scale_bytes;
}

size_t weight_matrix_bytes(const WeightMatrix *m) {
  size_t n = (size_t)m->rows * (size_t)m->cols;
  if (m->format == WEIGHT_MXFP4) return n / 2 + n / MXFP4_BLOCK_SIZE;
  if (m->format == WEIGHT_Q8)
    return q8_data_bytes(m->rows, m->cols) + q8_num_scales(m->rows) * sizeof(float);
  return n * format_size(m->format);
}

// ---------------------------------------------------------------------------------------------
// Buffers

// 64-byte aligned, NULL when the memory is not there.
static void *alloc_buffer(size_t bytes) {
  void *p = NULL;
  return posix_memalign(&p, 64, bytes ? bytes : 1) == 0 ? p : NULL;
}

static void keep(WeightsOwned *o, void *p) {
  if (o->num_allocs == o->cap_allocs) {
    o->cap_allocs = o->cap_allocs ? 2 * o->cap_allocs : 64;
    o->allocs = xrealloc(o->allocs, (size_t)o->cap_allocs * sizeof *o->allocs);
  }
  o->allocs[o->num_allocs++] = p;
}

static bool out_of_memory(Loader *L, const char *name, size_t bytes) {
  snprintf(L->err, L->err_size, "out of memory for tensor '%s' (%.2f GiB)", name,
           (double)bytes / (1 << 30));
  return false;
}

// A buffer the weights keep; NULL with a message when out of memory.
static void *loader_alloc(Loader *L, const char *name, size_t bytes) {
  void *p = alloc_buffer(bytes);
  if (!p)
    out_of_memory(L, name, bytes);
  else
    keep(L->owned, p);
  return p;
}

// ---------------------------------------------------------------------------------------------
// Checkpoint tensors

static void format_shape(const int64_t *shape, int num_dims, char *out, size_t out_size) {
  int n = snprintf(out, out_size, "[");
  for (int i = 0; i < num_dims && n > 0 && (size_t)n < out_size; i++)
    n += snprintf(out + n, out_size - (size_t)n, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (n > 0 && (size_t)n < out_size) snprintf(out + n, out_size - (size_t)n, "]");
}

// Checks a file's tensor against the spec: dtype (U8 for MXFP4, else BF16 or F32) and shape.
static bool check_tensor(Loader *L, const StTensor *t, const CheckpointTensor *spec) {
  bool mxfp4 = checkpoint_role_is_mxfp4(spec->role);
  if (mxfp4 ? t->dtype != ST_U8 : t->dtype != ST_BF16 && t->dtype != ST_F32) {
    snprintf(L->err, L->err_size, "%s: tensor '%s' has dtype %s, expected %s", t->path, t->name,
             st_dtype_name(t->dtype), mxfp4 ? "U8 (MXFP4 bytes)" : "BF16 (or F32)");
    return false;
  }
  bool same = t->num_dims == spec->num_dims;
  for (int i = 0; same && i < spec->num_dims; i++) same = t->shape[i] == spec->shape[i];
  if (!same) {
    char have[128], want[128];
    format_shape(t->shape, t->num_dims, have, sizeof have);
    format_shape(spec->shape, spec->num_dims, want, sizeof want);
    snprintf(L->err, L->err_size, "%s: tensor '%s' has shape %s, expected %s from config.json",
             t->path, t->name, have, want);
  }
  return same;
}

static size_t dtype_size(StDtype d) { return d == ST_F32 ? 4 : d == ST_BF16 ? 2 : 1; }

// Replaces the source's bytes by the part the shard keeps (weights_slice.h), in a new buffer.
static bool source_slice(Loader *L, Source *s) {
  const WeightsSlice sl = weights_slice_of(L->config, L->shard, &s->spec);
  if (sl.num_runs == 0) return true;
  CheckpointTensor kept = s->spec;
  weights_slice_apply_shape(&sl, &kept);
  const size_t elem = dtype_size(s->dtype);
  void *part = alloc_buffer((size_t)kept.num_elements * elem);
  if (!part) return out_of_memory(L, s->spec.name, (size_t)kept.num_elements * elem);
  weights_slice_copy(&sl, &s->spec, elem, s->data, part);
  free(s->generated);
  s->generated = part;
  s->data = part;
  s->spec = kept;
  return true;
}

// Tensor role of layer (-1 for the model's), as the shard keeps it.
static bool source_get(Loader *L, CheckpointRole role, int layer, Source *s) {
  *s = (Source){0};
  checkpoint_tensor_of(L->config, role, layer, &s->spec);
  s->dtype = s->spec.dtype;
  if (L->dummy) {
    s->generated = alloc_buffer((size_t)s->spec.num_bytes);
    if (!s->generated) return out_of_memory(L, s->spec.name, (size_t)s->spec.num_bytes);
    weights_dummy_fill(L->config, &s->spec, L->options->seed, s->generated);
    s->data = s->generated;
    return source_slice(L, s);
  }
  const StTensor *t = st_set_find(&L->owned->files, s->spec.name);
  if (!t) {
    snprintf(L->err, L->err_size,
             "%s: missing tensor '%s': none of the folder's *.safetensors files holds it", L->dir,
             s->spec.name);
    return false;
  }
  if (!check_tensor(L, t, &s->spec)) return false;
  s->data = t->data;
  s->dtype = t->dtype;
  return source_slice(L, s);
}

// The weights keep the source's bytes: generated ones join the owned buffers.
static void source_adopt(Loader *L, Source *s) {
  if (s->generated) keep(L->owned, s->generated);
  s->generated = NULL;
}

static void source_release(Source *s) {
  free(s->generated);
  s->generated = NULL;
}

// ---------------------------------------------------------------------------------------------
// Conversions (exact, except f32 -> bf16, which rounds to nearest even). The checkpoint is
// little-endian, as are the hosts the engine runs on.

// src: [n] BF16 or F32
static void convert_to_f32(const void *src, StDtype dtype, int64_t n, float *out) {
  if (dtype == ST_F32) {
    memcpy(out, src, (size_t)n * sizeof(float));
    return;
  }
  const uint8_t *bytes = src;  // a file's tensors need not be aligned
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    uint16_t h;
    memcpy(&h, bytes + 2 * i, sizeof h);
    out[i] = bf16_to_f32(h);
  }
}

// src: [n] BF16 or F32
static void convert_to_bf16(const void *src, StDtype dtype, int64_t n, uint16_t *out) {
  if (dtype == ST_BF16) {
    memcpy(out, src, (size_t)n * 2);
    return;
  }
  const uint8_t *bytes = src;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    float f;
    memcpy(&f, bytes + 4 * i, sizeof f);
    out[i] = bf16_from_f32(f);
  }
}

// Decodes num_rows MXFP4 rows into F32 or BF16 (both exact).
// blocks: [num_rows, cols / 32, 16], scales: [num_rows, cols / 32], out: [num_rows, cols]
static void decode_experts(const uint8_t *blocks, const uint8_t *scales, int64_t num_rows,
                           int64_t cols, WeightFormat f, void *out) {
  const int64_t groups = cols / MXFP4_BLOCK_SIZE;
#pragma omp parallel
  {
    float *row = f == WEIGHT_F32 ? NULL : xmalloc((size_t)cols * sizeof(float));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < num_rows; r++) {
      float *dst = f == WEIGHT_F32 ? (float *)out + r * cols : row;
      mxfp4_decode_row(blocks + r * groups * MXFP4_BLOCK_BYTES, scales + r * groups, cols, dst);
      for (int64_t j = 0; f == WEIGHT_BF16 && j < cols; j++)
        ((uint16_t *)out)[r * cols + j] = bf16_from_f32(row[j]);
    }
    free(row);
  }
}

// ---------------------------------------------------------------------------------------------
// Loading by kind

// Norm gains, biases and sinks: float32.
static bool load_vector(Loader *L, CheckpointRole role, int layer, const float **out) {
  Source s;
  if (!source_get(L, role, layer, &s)) return false;
  float *v = loader_alloc(L, s.spec.name, (size_t)s.spec.num_elements * sizeof(float));
  if (v) convert_to_f32(s.data, s.dtype, s.spec.num_elements, v);
  source_release(&s);
  *out = v;
  return v != NULL;
}

// Quantizes a [rows, cols] BF16 or F32 tensor into WEIGHT_Q8 buffers (q8.h), row by row.
// data: [q8_data_bytes(rows, cols)], scales: [q8_num_scales(rows)]
static void quantize_q8(const void *src, StDtype dtype, int64_t rows, int64_t cols, uint8_t *data,
                        float *scales) {
  const size_t elem = dtype == ST_F32 ? sizeof(float) : 2;
  q8_clear(rows, cols, data, scales);
#pragma omp parallel
  {
    float *row = xmalloc((size_t)cols * sizeof(float));  // [cols]
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
      convert_to_f32((const uint8_t *)src + (size_t)(r * cols) * elem, dtype, cols, row);
      q8_quantize_row(row, r, cols, data, scales);
    }
    free(row);
  }
}

// A [rows, cols] matrix in its dense format (weights_dense_format); bf16 kept as bf16 is not
// copied.
static bool load_dense(Loader *L, CheckpointRole role, int layer, WeightMatrix *m) {
  Source s;
  if (!source_get(L, role, layer, &s)) return false;
  const WeightFormat f = weights_dense_format(role, L->options);
  const int64_t rows = s.spec.shape[0], cols = s.spec.shape[1];
  *m = (WeightMatrix){.format = f, .rows = rows, .cols = cols};
  if (f == WEIGHT_BF16 && s.dtype == ST_BF16 && ((uintptr_t)s.data & 1) == 0) {
    m->data = s.data;
    source_adopt(L, &s);
    return true;
  }
  if (f == WEIGHT_Q8) {
    uint8_t *data = loader_alloc(L, s.spec.name, q8_data_bytes(rows, cols));
    float *scales = data ? loader_alloc(L, s.spec.name, q8_num_scales(rows) * sizeof(float)) : NULL;
    if (scales) quantize_q8(s.data, s.dtype, rows, cols, data, scales);
    source_release(&s);
    m->data = data;
    m->scales = scales;
    return scales != NULL;
  }
  void *buf = loader_alloc(L, s.spec.name, (size_t)s.spec.num_elements * format_size(f));
  if (buf && f == WEIGHT_F32) convert_to_f32(s.data, s.dtype, s.spec.num_elements, buf);
  if (buf && f == WEIGHT_BF16) convert_to_bf16(s.data, s.dtype, s.spec.num_elements, buf);
  source_release(&s);
  m->data = buf;
  return buf != NULL;
}

// One layer's mlp1 or mlp2 experts from their blocks and scales.  m: [num_experts]
static bool load_experts(Loader *L, CheckpointRole blocks_role, CheckpointRole scales_role,
                         int layer, WeightMatrix *m) {
  Source b, s;
  if (!source_get(L, blocks_role, layer, &b)) return false;
  if (!source_get(L, scales_role, layer, &s)) {
    source_release(&b);
    return false;
  }
  const int64_t num_experts = b.spec.shape[0], rows = b.spec.shape[1], groups = b.spec.shape[2];
  const int64_t cols = groups * MXFP4_BLOCK_SIZE;
  const WeightFormat f = L->options->expert_format;
  const uint8_t *blocks = b.data, *scales = s.data;
  void *decoded = NULL;
  if (f == WEIGHT_MXFP4) {
    source_adopt(L, &b);
    source_adopt(L, &s);
  } else {
    decoded = loader_alloc(L, b.spec.name, (size_t)(num_experts * rows * cols) * format_size(f));
    if (decoded) decode_experts(blocks, scales, num_experts * rows, cols, f, decoded);
    source_release(&b);
    source_release(&s);
    if (!decoded) return false;
  }
  for (int64_t e = 0; e < num_experts; e++) {
    m[e] = (WeightMatrix){.format = f, .rows = rows, .cols = cols};
    if (f == WEIGHT_MXFP4) {
      m[e].data = blocks + e * rows * groups * MXFP4_BLOCK_BYTES;
      m[e].scales = scales + e * rows * groups;
    } else {
      m[e].data = (const uint8_t *)decoded + (size_t)(e * rows * cols) * format_size(f);
    }
  }
  return true;
}

// The attention output bias is added once: by tensor-parallel rank 0 (the others' products are
// partial sums of the same output).
static bool load_out_bias(Loader *L, int l, LayerWeights *lw) {
  return L->shard->tp_rank != 0 || load_vector(L, CKPT_OUT_BIAS, l, &lw->out_bias);
}

static int num_local_experts(const Shard *s) { return s->expert_end - s->expert_begin; }

static bool load_layer(Loader *L, int l, LayerWeights *lw, WeightMatrix *experts) {
  lw->mlp1 = experts;                                // [local experts]
  lw->mlp2 = experts + num_local_experts(L->shard);  // [local experts]
  return load_vector(L, CKPT_ATTN_NORM, l, &lw->attn_norm) &&
         load_dense(L, CKPT_QKV_WEIGHT, l, &lw->qkv) &&
         load_vector(L, CKPT_QKV_BIAS, l, &lw->qkv_bias) &&
         load_vector(L, CKPT_SINKS, l, &lw->sinks) && load_dense(L, CKPT_OUT_WEIGHT, l, &lw->out) &&
         load_out_bias(L, l, lw) && load_vector(L, CKPT_MLP_NORM, l, &lw->mlp_norm) &&
         load_dense(L, CKPT_GATE_WEIGHT, l, &lw->gate) &&
         load_vector(L, CKPT_GATE_BIAS, l, &lw->gate_bias) &&
         load_experts(L, CKPT_MLP1_BLOCKS, CKPT_MLP1_SCALES, l, lw->mlp1) &&
         load_vector(L, CKPT_MLP1_BIAS, l, &lw->mlp1_bias) &&
         load_experts(L, CKPT_MLP2_BLOCKS, CKPT_MLP2_SCALES, l, lw->mlp2) &&
         load_vector(L, CKPT_MLP2_BIAS, l, &lw->mlp2_bias);
}

static bool load_all(Loader *L, GptOssWeights *w) {
  const Shard *s = L->shard;
  WeightsOwned *o = L->owned;
  const size_t num_layers = (size_t)shard_num_layers(s), experts = (size_t)num_local_experts(s);
  o->layers = xcalloc(num_layers, sizeof *o->layers);
  o->experts = xcalloc(num_layers * 2 * experts, sizeof *o->experts);
  w->layers = o->layers;
  if (shard_is_first_stage(s) && !load_dense(L, CKPT_EMBEDDING, -1, &w->embedding)) return false;
  if (shard_is_last_stage(s) && (!load_vector(L, CKPT_FINAL_NORM, -1, &w->final_norm) ||
                                 !load_dense(L, CKPT_UNEMBEDDING, -1, &w->unembedding)))
    return false;
  for (size_t i = 0; i < num_layers; i++)
    if (!load_layer(L, s->layer_begin + (int)i, &o->layers[i], o->experts + i * 2 * experts))
      return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Entry points

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

// The folder holding OpenAI's config.json for model: model/original (a Hugging Face download of
// openai/gpt-oss-*) before model itself. False when neither holds one.
static bool find_checkpoint_dir(const char *model, char *dir, size_t dir_size) {
  char path[PATH_MAX + 16];
  snprintf(dir, dir_size, "%s/original", model);
  snprintf(path, sizeof path, "%s/config.json", dir);
  if (is_file(path)) return true;
  snprintf(dir, dir_size, "%s", model);
  snprintf(path, sizeof path, "%s/config.json", dir);
  return is_file(path);
}

// The config (from the folder's config.json or a preset), the folder and whether to generate.
static bool resolve_model(const char *model, LoadFormat format, GptOssConfig *c, char *dir,
                          size_t dir_size, bool *dummy, char *err, size_t err_size) {
  bool have_dir = find_checkpoint_dir(model, dir, dir_size);
  *dummy = format == LOAD_DUMMY || (format == LOAD_AUTO && !have_dir);
  if (have_dir) {
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/config.json", dir);
    return config_load_json(path, c, err, err_size);
  }
  if (*dummy && config_preset(model, c)) return true;
  if (format == LOAD_SAFETENSORS)
    snprintf(err, err_size,
             "%s: not a checkpoint folder: no config.json in it or in its original/ folder", model);
  else if (format == LOAD_DUMMY)
    snprintf(err, err_size, "'%s' is neither a preset (%s) nor a folder with a config.json", model,
             config_preset_names());
  else
    snprintf(err, err_size,
             "'%s' is neither a checkpoint folder (config.json and *.safetensors, in it or "
             "in its original/ folder) nor a preset (%s)",
             model, config_preset_names());
  return false;
}

// False with a message when the kept weights could not fit in this machine's memory.
static bool check_memory(const GptOssConfig *c, const WeightsOptions *o, const char *model,
                         char *err, size_t err_size) {
  struct sysinfo si;
  if (sysinfo(&si) != 0) return true;
  double have = ((double)si.totalram + (double)si.totalswap) * si.mem_unit;
  WeightsPlan p, small;
  weights_plan(c, o, &p);
  if ((double)p.loaded_bytes <= have) return true;
  WeightsOptions smallest = {.dense_format = WEIGHT_BF16, .expert_format = WEIGHT_MXFP4};
  weights_plan(c, &smallest, &small);
  const double gib = 1 << 30;
  snprintf(err, err_size,
           "%s: the weights need %.1f GiB kept as %s dense and %s experts, but "
           "this machine has %.1f GiB of memory (bf16 dense and mxfp4 experts need %.1f GiB)",
           model, (double)p.loaded_bytes / gib, weight_format_name(o->dense_format),
           weight_format_name(o->expert_format), have / gib, (double)small.loaded_bytes / gib);
  return false;
}

bool weights_are_dummy(const char *model, LoadFormat format) {
  char dir[PATH_MAX];
  return format == LOAD_DUMMY ||
         (format == LOAD_AUTO && !find_checkpoint_dir(model, dir, sizeof dir));
}

bool weights_formats_from_name(const char *name, const char *model, WeightsOptions *o) {
  if (strcmp(name, "auto") == 0) name = weights_are_dummy(model, o->load_format) ? "q8" : "f32";
  if (strcmp(name, "f32") == 0) {
    o->dense_format = o->expert_format = WEIGHT_F32;
    return true;
  }
  if (strcmp(name, "bf16") != 0 && strcmp(name, "q8") != 0) return false;
  o->dense_format = name[0] == 'b' ? WEIGHT_BF16 : WEIGHT_Q8;
  o->expert_format = WEIGHT_MXFP4;
  return true;
}

bool weights_load_config(const char *model, LoadFormat format, GptOssConfig *c, char *err,
                         size_t err_size) {
  char dir[PATH_MAX];
  bool dummy;
  return resolve_model(model, format, c, dir, sizeof dir, &dummy, err, err_size);
}

bool weights_load(const char *model, const WeightsOptions *o, GptOssWeights *w, char *err,
                  size_t err_size) {
  *w = (GptOssWeights){0};
  if (o->dense_format == WEIGHT_MXFP4) {
    snprintf(err, err_size,
             "dense weights are kept as f32 or bf16 (q8: the unembedding), not mxfp4");
    return false;
  }
  if (o->expert_format == WEIGHT_Q8) {
    snprintf(err, err_size, "expert weights are kept as f32, bf16 or mxfp4, not q8");
    return false;
  }
  char dir[PATH_MAX];
  bool dummy;
  GptOssConfig c;
  if (!resolve_model(model, o->load_format, &c, dir, sizeof dir, &dummy, err, err_size) ||
      !check_memory(&c, o, model, err, err_size))
    return false;
  if (o->shard && !shard_check(&c, o->shard->tp_size, o->shard->pp_size, err, err_size))
    return false;
  WeightsOwned *owned = xcalloc(1, sizeof *owned);
  w->config = c;
  w->shard = o->shard ? *o->shard : shard_whole(&c);
  w->owned = owned;
  Loader L = {.config = &w->config,
              .options = o,
              .shard = &w->shard,
              .owned = owned,
              .dummy = dummy,
              .dir = dir,
              .err = err,
              .err_size = err_size};
  bool ok = (dummy || st_set_open(&owned->files, dir, err, err_size)) && load_all(&L, w);
  if (!ok) weights_free(w);
  return ok;
}

void weights_free(GptOssWeights *w) {
  WeightsOwned *o = w->owned;
  if (o) {
    for (int i = 0; i < o->num_allocs; i++) free(o->allocs[i]);
    free(o->allocs);
    st_set_close(&o->files);
    free(o->layers);
    free(o->experts);
    free(o);
  }
  *w = (GptOssWeights){0};
}
