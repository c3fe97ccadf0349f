// cuda_weights.cu: the device copy of a GptOssWeights: one device allocation holding every
// matrix (in its format: BF16/F32 dense, MXFP4/BF16/F32 experts) and float32 vector, and host
// structs of the same shapes pointing into it, for the shard the host weights hold (its layers,
// heads, experts; MXFP4 expert codes moved into the layout the MoE kernels decode,
// cuda_mxfp4_layout.h). One walk over the weights serves both passes: sizing (and refusing Q8)
// and copying. Never touches the host weights' memory beyond reading.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_weights.cuh"

// One pass of the walk: base NULL sizes it; otherwise each piece is copied to base + offset.
struct CudaUpload {
  CudaState *st;
  char *base;
  size_t offset;
  bool failed;
  char *err;
  size_t err_size;
};

static void cuda_upload_piece(CudaUpload *u, const void *src, size_t bytes, const void **dst) {
  *dst = NULL;
  if (!src || bytes == 0 || u->failed) return;
  const size_t at = u->offset;
  u->offset += cuda_round256(bytes);
  if (!u->base) return;
  cudaError_t e = cudaMemcpyAsync(u->base + at, src, bytes, cudaMemcpyHostToDevice, u->st->stream);
  if (e != cudaSuccess) {
    snprintf(u->err, u->err_size, "copying %zu bytes of weights to the device: %s", bytes,
             cudaGetErrorString(e));
    u->failed = true;
    return;
  }
  *dst = u->base + at;
}

static void cuda_upload_vector(CudaUpload *u, const float *src, size_t n, const float **dst) {
  cuda_upload_piece(u, src, n * sizeof(float), (const void **)dst);
}

// name and layer (-1: none) for messages.
static void cuda_upload_matrix(CudaUpload *u, const WeightMatrix *h, WeightMatrix *d,
                               const char *name, int layer) {
  *d = *h;
  d->data = d->scales = NULL;
  if (!h->data || u->failed) return;
  const size_t n = (size_t)h->rows * (size_t)h->cols;
  size_t data_bytes = 0, scale_bytes = 0;
  switch (h->format) {
    case WEIGHT_F32: data_bytes = n * sizeof(float); break;
    case WEIGHT_BF16: data_bytes = n * sizeof(uint16_t); break;
    case WEIGHT_MXFP4: data_bytes = n / 2, scale_bytes = n / 32; break;
    case WEIGHT_Q8: {
      char where[32] = "";
      if (layer >= 0) snprintf(where, sizeof where, "layer %d ", layer);
      snprintf(u->err, u->err_size,
               "the CUDA backend does not take Q8 weights (%s%s is Q8): use --weight-format "
               "bf16 or f32",
               where, name);
      u->failed = true;
      return;
    }
  }
  cuda_upload_piece(u, h->data, data_bytes, &d->data);
  cuda_upload_piece(u, h->scales, scale_bytes, &d->scales);
}

__global__ void cuda_mxfp4_store_kernel(uint32_t *words, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    words[i] = mxfp4_to_stored(words[i]);
}

void cuda_mxfp4_store(CudaState *st, void *codes, size_t bytes) {
  const size_t n = bytes / 4;  // rows of whole 16-byte blocks: whole words
  if (n == 0) return;
  const unsigned blocks = cuda_stride_blocks(n, 256);
  cuda_mxfp4_store_kernel<<<blocks, 256, 0, st->stream>>>((uint32_t *)codes, (int64_t)n);
  CUDA_CHECK_LAUNCH();
}

// A layer's mlp1 or mlp2 experts, their MXFP4 codes moved into the stored layout once copied.
static void cuda_upload_experts(CudaUpload *u, const WeightMatrix *h, WeightMatrix *d, size_t E,
                                const char *name, int layer) {
  for (size_t e = 0; h && e < E; e++) {
    cuda_upload_matrix(u, &h[e], &d[e], name, layer);
    if (d[e].data && d[e].format == WEIGHT_MXFP4)
      cuda_mxfp4_store(u->st, (void *)d[e].data, (size_t)(d[e].rows * d[e].cols / 2));
  }
}

// The shard's experts per layer.
static size_t cuda_num_experts(const GptOssWeights *h) {
  return (size_t)(h->shard.expert_end - h->shard.expert_begin);
}

// The shard's part of the model, in one fixed order (both passes must visit the same pieces).
static void cuda_upload_walk(CudaUpload *u, const GptOssWeights *h, GptOssWeights *d) {
  const GptOssConfig *c = &h->config;
  const Shard *s = &h->shard;
  const size_t hidden = (size_t)c->hidden_size, E = cuda_num_experts(h);
  const size_t inter = (size_t)c->intermediate_size;
  const size_t qkv_rows = (size_t)(s->num_heads + 2 * s->num_kv_heads) * (size_t)c->head_dim;
  cuda_upload_matrix(u, &h->embedding, &d->embedding, "embedding", -1);
  for (int l = 0; l < shard_num_layers(s) && h->layers; l++) {
    const LayerWeights *hl = &h->layers[l];
    LayerWeights *dl = &d->layers[l];
    cuda_upload_vector(u, hl->attn_norm, hidden, &dl->attn_norm);
    cuda_upload_matrix(u, &hl->qkv, &dl->qkv, "qkv", l);
    cuda_upload_vector(u, hl->qkv_bias, qkv_rows, &dl->qkv_bias);
    cuda_upload_vector(u, hl->sinks, (size_t)s->num_heads, &dl->sinks);
    cuda_upload_matrix(u, &hl->out, &dl->out, "out", l);
    cuda_upload_vector(u, hl->out_bias, hidden, &dl->out_bias);
    cuda_upload_vector(u, hl->mlp_norm, hidden, &dl->mlp_norm);
    cuda_upload_matrix(u, &hl->gate, &dl->gate, "gate (router)", l);
    cuda_upload_vector(u, hl->gate_bias, (size_t)c->num_experts, &dl->gate_bias);
    cuda_upload_experts(u, hl->mlp1, dl->mlp1, E, "mlp1", l);
    cuda_upload_vector(u, hl->mlp1_bias, E * 2 * inter, &dl->mlp1_bias);
    cuda_upload_experts(u, hl->mlp2, dl->mlp2, E, "mlp2", l);
    cuda_upload_vector(u, hl->mlp2_bias, E * hidden, &dl->mlp2_bias);
  }
  cuda_upload_vector(u, h->final_norm, hidden, &d->final_norm);
  cuda_upload_matrix(u, &h->unembedding, &d->unembedding, "unembedding", -1);
}

CudaWeightsOwned *cuda_weights_skeleton(GptOssWeights *device, bool with_layers) {
  CudaWeightsOwned *o = (CudaWeightsOwned *)xcalloc(1, sizeof(*o));
  device->owned = o;
  if (!with_layers) return o;
  const size_t L = (size_t)shard_num_layers(&device->shard);
  const size_t E = (size_t)(device->shard.expert_end - device->shard.expert_begin);
  o->layers = (LayerWeights *)xcalloc(L ? L : 1, sizeof(LayerWeights));
  o->experts = (WeightMatrix *)xcalloc(L * 2 * E + 1, sizeof(WeightMatrix));
  for (size_t l = 0; l < L; l++) {
    o->layers[l].mlp1 = o->experts + (2 * l) * E;
    o->layers[l].mlp2 = o->experts + (2 * l + 1) * E;
  }
  device->layers = o->layers;
  return o;
}

bool cuda_weights_alloc(CudaState *st, CudaWeightsOwned *o, size_t bytes, char *err,
                        size_t err_size) {
  const size_t total = bytes ? bytes : 256;
  cudaError_t e = cudaMalloc(&o->device, total);
  if (e == cudaSuccess) return true;
  (void)cudaGetLastError();
  o->device = NULL;
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
  snprintf(
      err, err_size, "the weights need %.2f GiB of device memory and %s has %.2f GiB free (%s)",
      (double)total / (1 << 30), st->name, (double)free_bytes / (1 << 30), cudaGetErrorString(e));
  return false;
}

bool cuda_weights_finish(Backend *be, GptOssWeights *device, const char *what, char *err,
                         size_t err_size) {
  const cudaError_t e = cudaStreamSynchronize(cuda_state(be)->stream);
  if (e == cudaSuccess) return true;
  snprintf(err, err_size, "%s: %s", what, cudaGetErrorString(e));
  cuda_weights_free(be, device);
  return false;
}

void cuda_weights_free(Backend *be, GptOssWeights *device) {
  CudaWeightsOwned *o = (CudaWeightsOwned *)device->owned;
  if (o) {
    cuda_enter(be);
    CUDA_CHECK(cudaFree(o->device));
    free(o->layers);
    free(o->experts);
    free(o);
  }
  *device = GptOssWeights{};
}

bool cuda_weights_upload(Backend *be, const GptOssWeights *host, GptOssWeights *device, char *err,
                         size_t err_size) {
  CudaState *st = cuda_enter(be);
  const GptOssConfig *c = &host->config;
  *device = GptOssWeights{};
  device->config = *c;
  device->shard = host->shard;
  CudaWeightsOwned *o = cuda_weights_skeleton(device, host->layers != NULL);
  for (int l = 0; host->layers && l < shard_num_layers(&host->shard); l++) {
    if (!host->layers[l].mlp1) o->layers[l].mlp1 = NULL;
    if (!host->layers[l].mlp2) o->layers[l].mlp2 = NULL;
  }
  CudaUpload u = {st, NULL, 0, false, err, err_size};
  cuda_upload_walk(&u, host, device);  // sizes, refuses Q8
  if (u.failed || !cuda_weights_alloc(st, o, u.offset, err, err_size)) goto fail;
  u = CudaUpload{st, (char *)o->device, 0, false, err, err_size};
  cuda_upload_walk(&u, host, device);
  if (u.failed) goto fail;
  return cuda_weights_finish(be, device, "copying the weights to the device", err, err_size);

fail:
  cuda_weights_free(be, device);
  return false;
}
