// cpu_backend.c: the CPU backend's table, its state (thread pool, which AVX-512 and AMX kernels
// the CPU runs, scratch) and its memory (host allocations). Owns the OpenBLAS thread setting (one
// thread per call). Computes nothing: each op lives in its own file (cpu_ops.c, cpu_linear.c,
// cpu_attention.c, cpu_moe.c and their kernels).
#include "backend/cpu/cpu_backend.h"

#include <cblas.h>
#include <cpuid.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/cpu/cpu_avx512.h"
#include "backend/cpu/cpu_internal.h"
#include "common/check.h"
#include "common/cpu_cores.h"

void *cpu_scratch(Backend *be, CpuScratchSlot slot, size_t bytes) {
  CHECK(slot >= 0 && slot < CPU_SCRATCH_COUNT);
  CpuScratch *s = &cpu_state(be)->scratch[slot];
  if (bytes > s->bytes) {
    size_t grown = s->bytes * 2 > bytes ? s->bytes * 2 : bytes;
    grown = (grown + 63) & ~(size_t)63;
    free(s->ptr);
    s->ptr = aligned_alloc(64, grown);
    if (!s->ptr) die("cpu backend: out of memory for %zu bytes of scratch", grown);
    s->bytes = grown;
  }
  return s->ptr;
}

static void *cpu_alloc(Backend *be, size_t bytes) {
  (void)be;
  return calloc(1, bytes ? bytes : 1);
}

static void cpu_free(Backend *be, void *ptr) {
  (void)be;
  free(ptr);
}

// Host memory is the CPU backend's memory: nothing to copy.
static const Batch *cpu_upload_batch(Backend *be, const Batch *host) {
  (void)be;
  return host;
}

static void cpu_to_host(Backend *be, void *dst, const void *src, size_t bytes) {
  (void)be;
  memcpy(dst, src, bytes);
}

static void cpu_destroy(Backend *be) {
  if (!be) return;
  CpuState *st = cpu_state(be);
  cpu_pool_destroy(st->pool);
  for (int i = 0; i < CPU_SCRATCH_COUNT; i++) free(st->scratch[i].ptr);
  free(st);
  free(be);
}

// The AVX-512 subsets a kernel needs besides its own instructions.
static bool cpu_has_avx512_base(void) {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

// AMX-TILE and AMX-INT8 (CPUID leaf 7: EDX bits 24 and 25), and Linux's permission for this
// process to use tile data (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, once: the
// kernel then keeps the tiles' state for every thread). GPTOSS_CPU_AMX=0 turns AMX off.
static bool cpu_amx_int8_usable(void) {
  const char *v = getenv("GPTOSS_CPU_AMX");
  if (v && *v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
    die("GPTOSS_CPU_AMX='%s': 0 (AVX-512 only) or 1 (AMX where the CPU has it, the default)", v);
  if (v && strcmp(v, "0") == 0) return false;
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  if (!(edx >> 24 & 1) || !(edx >> 25 & 1)) return false;
  enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
  return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

// AMX-BF16 (CPUID leaf 7: EDX bit 22); its tile data is the permission cpu_amx_int8_usable got.
static bool cpu_amx_bf16_present(void) {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx >> 22 & 1);
}

// The kernels a backend may choose from: none of its own (OpenBLAS on decoded tiles, scalar
// attention), AVX2 + FMA only, or all the CPU has.
typedef enum { CPU_KERNELS_PORTABLE, CPU_KERNELS_AVX2, CPU_KERNELS_ALL } CpuKernels;

static Backend *cpu_backend_new(int num_threads, CpuKernels kernels) {
  if (num_threads <= 0) num_threads = cpu_cores_usable();
  CpuState *st = xcalloc(1, sizeof(*st));
  st->num_threads = num_threads;
  st->pool = cpu_pool_create(num_threads);
  st->avx2 = kernels != CPU_KERNELS_PORTABLE && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma");
  const bool fast_kernels = kernels == CPU_KERNELS_ALL;
  st->avx512 = fast_kernels && cpu_has_avx512_base();
  st->avx512_vnni = st->avx512 && __builtin_cpu_supports("avx512vnni");
  st->avx512_bf16 = st->avx512 && __builtin_cpu_supports("avx512bf16");
  if (st->avx512_bf16) cpu_mxfp4_bf16_init();  // cpu_bf16.c's decode table, once a process
  st->amx_int8 = st->avx512_vnni && cpu_amx_int8_usable();
  st->amx_bf16 = st->amx_int8 && st->avx512_bf16 && cpu_amx_bf16_present();
  const char *mxfp4 = getenv("GPTOSS_CPU_MXFP4");
  if (mxfp4 && *mxfp4 && strcmp(mxfp4, "int8") != 0 && strcmp(mxfp4, "bf16") != 0)
    die("GPTOSS_CPU_MXFP4='%s': int8 (the default where the CPU has AVX512_VNNI; AMX-BF16 from "
        "%d input rows where it has that) or bf16",
        mxfp4, CPU_MXFP4_AMX_MIN_ROWS);
  st->mxfp4_int8 = st->avx512_vnni && !(mxfp4 && strcmp(mxfp4, "bf16") == 0);
  // The ops split matrix products across the pool's threads and call OpenBLAS from each of them,
  // single-threaded: two pools of spinning threads on the same cores would fight.
  openblas_set_num_threads(1);

  Backend *be = xcalloc(1, sizeof(*be));
  be->name = "cpu";
  be->host_memory = true;
  be->state = st;
  be->embed = cpu_embed;
  be->rmsnorm = cpu_rmsnorm;
  be->linear = cpu_linear;
  be->rope = cpu_rope;
  be->kv_write = cpu_kv_write;
  be->attention = cpu_attention;
  be->moe = cpu_moe;
  be->gather_rows = cpu_gather_rows;
  be->copy_rows = cpu_copy_rows;
  be->add = cpu_add;
  be->zero = cpu_zero;
  be->sample = cpu_sample;
  be->upload_batch = cpu_upload_batch;
  be->to_host = cpu_to_host;
  be->alloc = cpu_alloc;
  be->free = cpu_free;
  be->destroy = cpu_destroy;
  return be;
}

Backend *cpu_backend_create(int num_threads) {
  return cpu_backend_new(num_threads, CPU_KERNELS_ALL);
}

bool cpu_backend_uses_amx(Backend *be) { return cpu_state(be)->amx_int8; }

bool cpu_backend_uses_amx_bf16(Backend *be) { return cpu_state(be)->amx_bf16; }

bool cpu_backend_pin(Backend *be, const int *cpus) {
  return cpu_pool_pin_workers(cpu_state(be)->pool, cpus);
}

Backend *cpu_backend_create_portable(int num_threads) {
  return cpu_backend_new(num_threads, CPU_KERNELS_PORTABLE);
}

Backend *cpu_backend_create_avx2(int num_threads) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return NULL;
  return cpu_backend_new(num_threads, CPU_KERNELS_AVX2);
}

bool cpu_backend_uses_avx2(Backend *be) { return cpu_state(be)->avx2; }
