// pyfmt.h: Python's number text, for output that must read exactly like vLLM's: repr() of a
// float ("inf", "10.0", "99.9", "1e-05") and float() of a string. Formats and parses only; it
// knows nothing of reports or flags.
#ifndef GB_BENCH_PYFMT_H
#define GB_BENCH_PYFMT_H

#include <stdbool.h>

#define PYFMT_FLOAT_LEN 32  // room for any repr() of a double, with its NUL

// Python's repr(v) (= str(v)): the shortest digits that read back as v, in fixed notation for
// decimal exponents -4..15 (always with a '.', "10.0"), else scientific ("1e+16", "1.5e-07").
void pyfmt_float_repr(double v, char out[static PYFMT_FLOAT_LEN]);

// Python's float(s) for decimal text: surrounding whitespace allowed, "inf"/"nan" accepted, hex
// and empty text refused (digit underscores, which Python allows, are refused too).
bool pyfmt_parse_float(const char *s, double *out);

#endif
