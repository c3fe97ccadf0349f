// export_cmd.c: `gptoss-engine export-checkpoint --model PRESET [--seed S] --out DIR`: writes a
// preset's seeded dummy weights (weights_dummy.h) as a checkpoint folder in OpenAI's original
// layout: DIR/config.json and DIR/model.safetensors (bf16 tensors, MXFP4 blocks and scales as
// U8), the bytes `--load-format dummy` converts. The same weights then load with
// `--load-format safetensors` and travel to other engines (scripts/export-gguf.py makes a GGUF
// of the folder for llama.cpp). Both files are written atomically (common/file.h), the
// safetensors file streamed tensor by tensor.
#include "cli/export_cmd.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_args.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/file.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/weights_dummy.h"

static const char USAGE[] =
    "usage: gptoss-engine export-checkpoint --model PRESET [--seed S] --out DIR\n"
    "  Writes PRESET's dummy weights for seed S (0, as serve and generate use by default) as\n"
    "  DIR/config.json + DIR/model.safetensors in OpenAI's original layout. PRESET: "
    "openai/gpt-oss-120b, openai/gpt-oss-20b, gpt-oss-tiny.\n";

// The safetensors header: every tensor's dtype, shape and byte range in checkpoint order, and
// the metadata, padded with spaces to a multiple of 8 bytes (as the format recommends).
static char *safetensors_header(const GptOssConfig *c, uint64_t seed, size_t *len) {
  json_t *header = json_object();
  char seed_text[32];
  snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)seed);
  json_object_set_new(header, "__metadata__",
                      json_pack("{s:s, s:s}", "format", "pt", "gptoss_dummy_seed", seed_text));
  int64_t offset = 0;
  for (int i = 0; i < checkpoint_num_tensors(c); i++) {
    CheckpointTensor t;
    checkpoint_tensor(c, i, &t);
    json_t *shape = json_array();
    for (int d = 0; d < t.num_dims; d++) json_array_append_new(shape, json_integer(t.shape[d]));
    json_object_set_new(header, t.name,
                        json_pack("{s:s, s:o, s:[I, I]}", "dtype", st_dtype_name(t.dtype),
                                  "shape", shape, "data_offsets", (json_int_t)offset,
                                  (json_int_t)(offset + t.num_bytes)));
    offset += t.num_bytes;
  }
  char *text = json_dumps(header, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(header);
  CHECK(text);
  size_t n = strlen(text), padded = (n + 7) / 8 * 8;
  text = xrealloc(text, padded + 1);
  memset(text + n, ' ', padded - n);
  text[padded] = '\0';
  *len = padded;
  return text;
}

typedef struct {
  const GptOssConfig *config;
  uint64_t seed;
} SafetensorsJob;

// The safetensors file: 8-byte little-endian header length, the header, every tensor's bytes.
static bool write_safetensors(int fd, void *ctx) {
  const SafetensorsJob *job = ctx;
  size_t header_len;
  char *header = safetensors_header(job->config, job->seed, &header_len);
  uint8_t len_le[8];
  for (int b = 0; b < 8; b++) len_le[b] = (uint8_t)((uint64_t)header_len >> (8 * b));
  bool ok = file_write_all(fd, len_le, sizeof len_le) && file_write_all(fd, header, header_len);
  free(header);
  for (int i = 0; ok && i < checkpoint_num_tensors(job->config); i++) {
    CheckpointTensor t;
    checkpoint_tensor(job->config, i, &t);
    void *bytes = xmalloc((size_t)t.num_bytes);
    weights_dummy_fill(job->config, &t, job->seed, bytes);
    ok = file_write_all(fd, bytes, (size_t)t.num_bytes);
    free(bytes);
  }
  return ok;
}

int export_cmd_main(int argc, char **argv) {
  const char *model = NULL, *out = NULL;
  uint64_t seed = 0;
  static const struct option longopts[] = {{"model", required_argument, 0, 'm'},
                                           {"seed", required_argument, 0, 's'},
                                           {"out", required_argument, 0, 'o'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (c) {
      case 'm': model = optarg; break;
      case 'o': out = optarg; break;
      case 's':
        seed = (uint64_t)cli_parse_long("export-checkpoint", "--seed", optarg, 0, __LONG_MAX__);
        break;
      case 'h': fputs(USAGE, stdout); exit(0);
      case ':': die("export-checkpoint: %s needs a value\n%s", argv[optind - 1], USAGE);
      default: die("export-checkpoint: unknown option '%s'\n%s", argv[optind - 1], USAGE);
    }
  }
  if (optind < argc) die("export-checkpoint: unexpected argument '%s'\n%s", argv[optind], USAGE);
  if (!model || !out) die("export-checkpoint: --model and --out are required\n%s", USAGE);
  GptOssConfig config;
  if (!config_preset(model, &config))
    die("export-checkpoint: '%s' is not a preset (%s); a checkpoint folder needs no export",
        model, config_preset_names());
  char err[1024];
  if (!file_make_dirs(out, err, sizeof err)) die("export-checkpoint: %s", err);

  char path[4096];
  json_t *config_json = config_to_json(&config);
  char *text = json_dumps(config_json, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(config_json);
  CHECK(text);
  Buf body = {0};
  buf_printf(&body, "%s\n", text);
  free(text);
  snprintf(path, sizeof path, "%s/config.json", out);
  if (!file_write_atomic(path, body.data, body.len, err, sizeof err))
    die("export-checkpoint: %s", err);
  buf_free(&body);
  snprintf(path, sizeof path, "%s/model.safetensors", out);
  SafetensorsJob job = {&config, seed};
  if (!file_write_atomic_with(path, write_safetensors, &job, err, sizeof err))
    die("export-checkpoint: %s", err);
  printf("export-checkpoint: %s seed %llu -> %s (config.json, model.safetensors)\n", model,
         (unsigned long long)seed, out);
  return 0;
}
