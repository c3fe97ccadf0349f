// cuda_graph.cu: ops recorded into CUDA graphs and replayed (backend.h: graph_begin, graph_end,
// graph_current, graph_launch, graph_free). A recording is a stream capture of the backend's one
// stream, instantiated once; a launch replays all its kernels for the cost of one call, where a
// decode step of gpt-oss-120b otherwise launches about 20 kernels a layer, 36 layers. A graph keeps
// the addresses it was recorded with, so it remembers the scratch buffers' generation (cuda_scratch
// bumps it when one moves) and is no longer current once one has moved. With -tp > 1 each rank
// records its own graph, NCCL's collectives included (they run on the backend's stream:
// dist/comm_nccl.c).
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda/cuda_internal.cuh"

static thread_local bool recording;  // this thread is between graph_begin and graph_end

bool cuda_graph_recording(void) { return recording; }

struct CudaGraph {
  cudaGraphExec_t exec;
  unsigned scratch_generation;  // of the scratch buffers its ops were recorded over
};

bool cuda_graph_begin(Backend *be, char *err, size_t err_size) {
  CudaState *st = cuda_enter(be);
  CHECK(!recording);
  if (st->profile) {
    snprintf(err, err_size, "GPTOSS_CUDA_PROFILE=1 times each op on its own, which a graph hides");
    return false;
  }
  // Thread-local: only this thread's calls that cannot be recorded (a synchronisation, a
  // cudaFree) fail the recording; another thread's (the engine's, another rank's recording its
  // own stream) do not.
  const cudaError_t e = cudaStreamBeginCapture(st->stream, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    snprintf(err, err_size, "cudaStreamBeginCapture: %s", cudaGetErrorString(e));
    (void)cudaGetLastError();
    return false;
  }
  recording = true;
  return true;
}

void *cuda_graph_end(Backend *be, char *err, size_t err_size) {
  CudaState *st = cuda_enter(be);
  CHECK(recording);
  recording = false;
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  const char *call = "cudaStreamEndCapture";
  cudaError_t e = cudaStreamEndCapture(st->stream, &graph);
  if (e == cudaSuccess) call = "cudaGraphInstantiate", e = cudaGraphInstantiate(&exec, graph, 0);
  if (e == cudaSuccess) call = "cudaGraphUpload", e = cudaGraphUpload(exec, st->stream);
  if (graph) (void)cudaGraphDestroy(graph);  // the instance keeps what it needs
  if (e != cudaSuccess) {
    snprintf(err, err_size, "%s: %s", call, cudaGetErrorString(e));
    (void)cudaGetLastError();
    if (exec) (void)cudaGraphExecDestroy(exec);
    return NULL;
  }
  CudaGraph *g = (CudaGraph *)xcalloc(1, sizeof *g);
  g->exec = exec;
  g->scratch_generation = st->scratch_generation;
  return g;
}

bool cuda_graph_current(const Backend *be, const void *graph) {
  const CudaState *st = (const CudaState *)be->state;
  return ((const CudaGraph *)graph)->scratch_generation == st->scratch_generation;
}

void cuda_graph_launch(Backend *be, void *graph) {
  CudaState *st = cuda_enter(be);
  const CudaGraph *g = (const CudaGraph *)graph;
  CHECK(g->scratch_generation == st->scratch_generation);  // the caller asked graph_current
  CUDA_CHECK(cudaGraphLaunch(g->exec, st->stream));
}

void cuda_graph_free(Backend *be, void *graph) {
  if (!graph) return;
  cuda_enter(be);
  CudaGraph *g = (CudaGraph *)graph;
  CUDA_CHECK(cudaGraphExecDestroy(g->exec));
  free(g);
}
