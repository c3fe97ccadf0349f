// cpu_exp.h: the constants of the CPU backend's vector exp (cpu_avx512.h's cpu_exp512,
// cpu_avx2.h's cpu_exp256), kept in one place so both compute the same function: x clamped to
// [CPU_EXP_MIN, CPU_EXP_MAX], x = n ln2 + r with |r| <= ln2 / 2 and ln2 in two parts, e^r by its
// Taylor series to r^7 (truncation below 2^-27) in Horner form, highest power first.
#ifndef GE_BACKEND_CPU_CPU_EXP_H
#define GE_BACKEND_CPU_CPU_EXP_H

#define CPU_EXP_MIN -104.0f  // below: the result is 0
#define CPU_EXP_MAX 89.0f    // above: +inf
#define CPU_EXP_LOG2E 1.44269504088896341f
#define CPU_EXP_LN2_HI 0.693145751953125f       // ln2's high bits (n ln2_hi is exact)
#define CPU_EXP_LN2_LO 1.42860682030941723e-6f  // ln2 - ln2_hi
#define CPU_EXP_TERMS 8
static const float CPU_EXP_TAYLOR[CPU_EXP_TERMS] = {
    1.0f / 5040.0f, 1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f};

#endif
