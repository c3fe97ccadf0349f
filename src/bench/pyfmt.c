// pyfmt.c: Python's float repr() and float() parsing in C (see pyfmt.h). Pure functions of
// their arguments: no I/O, no allocation.
#include "bench/pyfmt.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pyfmt_float_repr(double v, char out[static PYFMT_FLOAT_LEN]) {
  if (isnan(v) || isinf(v)) {
    snprintf(out, PYFMT_FLOAT_LEN, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
    return;
  }
  // The fewest significant digits that round-trip: what repr() prints (correct rounding makes
  // the closest k-digit string the one to try).
  char sci[PYFMT_FLOAT_LEN];
  for (int precision = 0; precision < 17; precision++) {
    snprintf(sci, sizeof sci, "%.*e", precision, v);
    if (strtod(sci, NULL) == v) break;
  }
  // sci is "[-]d[.ddd]e±XX": split it into sign, digits and decimal exponent.
  const char *p = sci;
  char *o = out;
  if (*p == '-') *o++ = *p++;
  char digits[20] = {0};
  int num_digits = 0;
  for (; *p != 'e'; p++)
    if (*p != '.') digits[num_digits++] = *p;
  int exp = atoi(p + 1);

  if (exp < -4 || exp >= 16) {
    *o++ = digits[0];
    if (num_digits > 1) {
      *o++ = '.';
      memcpy(o, digits + 1, (size_t)num_digits - 1);
      o += num_digits - 1;
    }
    snprintf(o, PYFMT_FLOAT_LEN - (size_t)(o - out), "e%+03d", exp);
    return;
  }
  if (exp < 0) {  // 0.000ddd
    *o++ = '0';
    *o++ = '.';
    for (int i = 0; i < -exp - 1; i++) *o++ = '0';
    memcpy(o, digits, (size_t)num_digits);
    o += num_digits;
  } else {  // ddd.ddd, padding the integer part with zeros and the fraction with one "0"
    for (int i = 0; i <= exp; i++) *o++ = i < num_digits ? digits[i] : '0';
    *o++ = '.';
    if (num_digits > exp + 1) {
      memcpy(o, digits + exp + 1, (size_t)(num_digits - exp - 1));
      o += num_digits - exp - 1;
    } else {
      *o++ = '0';
    }
  }
  *o = '\0';
}

bool pyfmt_parse_float(const char *s, double *out) {
  while (isspace((unsigned char)*s)) s++;
  if (*s == '\0' || strpbrk(s, "xX_")) return false;
  char *end;
  double v = strtod(s, &end);
  if (end == s) return false;
  while (isspace((unsigned char)*end)) end++;
  if (*end != '\0') return false;
  *out = v;
  return true;
}
