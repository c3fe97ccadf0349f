// cpu_moe512.c: the AVX-512 twin of cpu_moe.c's clamped SwiGLU over one row: 16 outputs at a
// time from 32 interleaved gate/linear values (two permutes split them), sigmoid through
// cpu_exp512. Same formula as the scalar loop; cpu_moe calls it only when the CPU has AVX-512.
// Writes only act.
#include "backend/cpu/cpu_avx512.h"
#include "backend/cpu/cpu_internal.h"
#include "model/config.h"

CPU_AVX512_TARGET void cpu_swiglu512_row(const float *h, int inter, float limit, float *act) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512 hi = _mm512_set1_ps(limit), lo = _mm512_set1_ps(-limit), one = _mm512_set1_ps(1.0f);
  const __m512 neg_alpha = _mm512_set1_ps(-GPTOSS_SWIGLU_ALPHA);
  for (int i = 0; i < inter; i += 16) {
    const int n = inter - i < 16 ? inter - i : 16;
    const __mmask16 m = (__mmask16)((1u << n) - 1);
    const __mmask16 m0 = n >= 8 ? 0xffff : (__mmask16)((1u << (2 * n)) - 1);
    const __mmask16 m1 = n <= 8 ? 0 : (__mmask16)((1u << (2 * (n - 8))) - 1);
    const __m512 a = _mm512_maskz_loadu_ps(m0, h + 2 * i);       // pairs i .. i + 7
    const __m512 b = _mm512_maskz_loadu_ps(m1, h + 2 * i + 16);  // pairs i + 8 .. i + 15
    const __m512 g = _mm512_min_ps(_mm512_permutex2var_ps(a, even, b), hi);
    const __m512 lin = _mm512_min_ps(_mm512_max_ps(_mm512_permutex2var_ps(a, odd, b), lo), hi);
    const __m512 sig = _mm512_add_ps(one, cpu_exp512(_mm512_mul_ps(neg_alpha, g)));
    _mm512_mask_storeu_ps(act + i, m,
                          _mm512_mul_ps(_mm512_div_ps(g, sig), _mm512_add_ps(lin, one)));
  }
}
