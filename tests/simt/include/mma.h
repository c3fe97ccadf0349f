// mma.h (tests/simt): WMMA on the host. Every lane holds the whole 16 x 16 tile (a fragment's
// element order is opaque to the kernels) and loads and multiplies it alike; a store writes each
// element once, as a GPU's lanes each store their own 8 (lane l the elements 32 k + l of the
// tile in row order), so that the race check sees one writer per element.
#ifndef GE_TESTS_SIMT_MMA_H
#define GE_TESTS_SIMT_MMA_H
#include <type_traits>

#include "cuda_bf16.h"
namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  float m[16][16];
  static const int num_elements = 256;
};
static inline float emu_val(float v) { return v; }
static inline float emu_val(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class U, class T, class L, class P>
static inline void load_matrix_sync(fragment<U, 16, 16, 16, T, L> &f, const P *p, unsigned ldm) {
  constexpr bool rm = std::is_same<L, row_major>::value;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++)  // A: (row i, col j); B: (k i, n j)
      f.m[i][j] = emu_val(rm ? p[i * ldm + j] : p[j * ldm + i]);
}
template <class F>
static inline void fill_fragment(F &f, float v) {
  for (auto &r : f.m)
    for (auto &x : r) x = v;
}
template <class A, class B, class C>
static inline void mma_sync(C &d, const A &a, const B &b, const C &c) {
  C out;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      float s = c.m[i][j];
      for (int k = 0; k < 16; k++) s += a.m[i][k] * b.m[k][j];
      out.m[i][j] = s;
    }
  d = out;
}
template <class F>
static inline void store_matrix_sync(float *p, const F &f, unsigned ldm, layout_t l) {
  for (int e = emu_lane(); e < 256; e += 32) {
    const int i = e / 16, j = e % 16;
    (l == mem_row_major ? p[i * ldm + j] : p[j * ldm + i]) = f.m[i][j];
  }
}
}  // namespace wmma
}  // namespace nvcuda

#endif
