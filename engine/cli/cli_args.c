// cli_args.c: strtol/strtod with whole-string and range checks for command-line flags.
#include "cli/cli_args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

long cli_parse_long(const char *command, const char *flag, const char *value, long lo, long hi) {
  char *end;
  errno = 0;
  long v = strtol(value, &end, 10);
  if (end == value || *end || errno || v < lo || v > hi)
    die("%s: %s '%s' is not an integer from %ld to %ld", command, flag, value, lo, hi);
  return v;
}

double cli_parse_double(const char *command, const char *flag, const char *value, double lo,
                        double hi) {
  char *end;
  errno = 0;
  double v = strtod(value, &end);
  if (end == value || *end || errno || !(v >= lo && v <= hi))
    die("%s: %s '%s' is not a number from %g to %g", command, flag, value, lo, hi);
  return v;
}

void cli_short_parallel_flags(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-tp") == 0)
      argv[i] = "--tensor-parallel-size";
    else if (strcmp(argv[i], "-pp") == 0)
      argv[i] = "--pipeline-parallel-size";
  }
}

DeviceKind cli_device_and_formats(const char *command, const char *device,
                                  const char *weight_format, const char *model,
                                  WeightsOptions *wo) {
  char err[512];
  DeviceKind d;
  if (!device_from_name(device, &d, err, sizeof err)) die("%s: %s", command, err);
  if (!weights_formats_from_name(weight_format, model, wo))
    die("%s: --weight-format '%s' is unknown; use auto, f32, bf16 or q8", command, weight_format);
  if (d == DEVICE_CUDA && strcmp(weight_format, "auto") == 0 && wo->dense_format == WEIGHT_Q8)
    wo->dense_format = WEIGHT_BF16;
  return d;
}
