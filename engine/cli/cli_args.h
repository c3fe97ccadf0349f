// cli_args.h: flags shared by the engine's subcommands: numbers parsed whole and range-checked
// (or the command dies with a message naming the subcommand, the flag and the allowed range),
// vLLM's one-dash -tp / -pp, and --device with --weight-format.
#ifndef GE_CLI_CLI_ARGS_H
#define GE_CLI_CLI_ARGS_H

#include "backend/backends.h"
#include "model/weights.h"

long cli_parse_long(const char *command, const char *flag, const char *value, long lo, long hi);
double cli_parse_double(const char *command, const char *flag, const char *value, double lo,
                        double hi);

// vLLM spells -tp and -pp with one dash; getopt_long_only would then take every -x as long, so
// they are rewritten in argv to --tensor-parallel-size and --pipeline-parallel-size.
void cli_short_parallel_flags(int argc, char **argv);

// --device and --weight-format together: the device by name (dies naming the flag when unknown
// or when --device cuda has no device), and the kept formats by name for model; "auto" keeps
// weights_formats_from_name's choice, except that q8 (a CPU format) becomes bf16 on CUDA.
DeviceKind cli_device_and_formats(const char *command, const char *device,
                                  const char *weight_format, const char *model,
                                  WeightsOptions *wo);

#endif
