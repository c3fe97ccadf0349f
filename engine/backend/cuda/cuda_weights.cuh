// cuda_weights.cuh: what the two makers of device weights share (cuda_weights.cu copies host
// weights, cuda_dummy.cu generates dummy ones on the device): the device GptOssWeights' owned
// part, its host-side structure and its one device allocation. Not for use outside
// engine/backend/cuda.
#ifndef GE_BACKEND_CUDA_CUDA_WEIGHTS_CUH
#define GE_BACKEND_CUDA_CUDA_WEIGHTS_CUH

#include "backend/cuda/cuda_internal.cuh"
#include "backend/cuda/cuda_mxfp4_layout.h"

// What a device GptOssWeights' `owned` points at (cuda_weights_free releases it).
struct CudaWeightsOwned {
  void *device;           // the one allocation
  LayerWeights *layers;   // [the shard's layers]
  WeightMatrix *experts;  // [layers, 2, the shard's experts] mlp1 and mlp2 of every layer
};

// The owned part of device (whose config and shard are set), and with with_layers its layers
// (device->layers) with each layer's mlp1 and mlp2 pointing at its experts' matrices; nothing
// on the device yet.
CudaWeightsOwned *cuda_weights_skeleton(GptOssWeights *device, bool with_layers);

// The one device allocation of bytes into o->device; false with how much was needed and free.
bool cuda_weights_alloc(CudaState *st, CudaWeightsOwned *o, size_t bytes, char *err,
                        size_t err_size);

// The end of a maker's second pass: waits for its queued copies or kernels; on a CUDA error
// frees device and says "what: the error" in err.
bool cuda_weights_finish(Backend *be, GptOssWeights *device, const char *what, char *err,
                         size_t err_size);

// MXFP4 expert codes (bytes of them, whole 16-byte blocks) moved in place, on the stream, into
// the layout the MoE kernels decode (cuda_mxfp4_layout.h); both makers store every MXFP4 expert
// matrix so.
void cuda_mxfp4_store(CudaState *st, void *codes, size_t bytes);

#endif
