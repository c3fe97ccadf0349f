// dataset_cmd.c: `gptoss-bench dataset sharegpt-synth`: gathers prose, builds the synthetic
// ShareGPT list, writes it atomically (a temporary file renamed over FILE), then loads it the
// way `bench --dataset-name sharegpt` will and prints what the study's workload would get.
// Owns the command line and the default text sources; the generation itself is sharegpt_synth.c.
#include "bench/dataset_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/dataset.h"
#include "bench/prose.h"
#include "bench/sharegpt_synth.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/file.h"

// Where the prose comes from unless --source is given: licence texts and package copyright
// files, present on every Debian system.
static const char *const DEFAULT_SOURCES[] = {"/usr/share/common-licenses",
                                              "/usr/share/doc/*/copyright"};
enum { MAX_SOURCES = 64, MIN_PROSE_BYTES = 64 * 1024 };

// The study's ShareGPT workload, for the check printed after writing.
enum { STUDY_NUM_PROMPTS = 1000, STUDY_INPUT_TOKENS = 215312, STUDY_SEED = 0 };

typedef struct {
  SynthParams synth;
  const char *out_path;
  const char *vocab_path;  // NULL: the default
  const char *sources[MAX_SOURCES];
  size_t num_sources;
} SynthOptions;

static const char USAGE[] =
    "usage: gptoss-bench dataset sharegpt-synth [--num-conversations N] [--seed S] -o FILE\n"
    "                                           [--source PATTERN ...] [--vocab FILE]\n"
    "  Writes a ShareGPT-format JSON file of real prose whose prompt and answer lengths, after\n"
    "  vLLM's ShareGPT filter, match the study's ShareGPT workload.\n"
    "  --num-conversations N  entries to write (default 1250: about 1170 pass the filter)\n"
    "  --seed S               generator seed (default 0)\n"
    "  -o, --output FILE      where to write (written to a temporary file, then renamed)\n"
    "  --vocab FILE           o200k_base.tiktoken to count tokens with\n"
    "                         (default: datasets/tokenizer/)\n"
    "  --source PATTERN       text files to take prose from: a file, a directory or a shell\n"
    "                         pattern; repeatable. Default:";

static void print_usage(FILE *out) {
  fputs(USAGE, out);
  for (size_t i = 0; i < sizeof DEFAULT_SOURCES / sizeof *DEFAULT_SOURCES; i++)
    fprintf(out, " %s", DEFAULT_SOURCES[i]);
  fputc('\n', out);
}

static unsigned long long parse_count(const char *flag, const char *value) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(value, &end, 10);
  if (errno || end == value || *end || value[0] == '-')
    die("dataset sharegpt-synth: %s '%s' is not a non-negative integer", flag, value);
  return v;
}

static SynthOptions parse_options(int argc, char **argv) {
  SynthOptions o = {.synth = {.num_conversations = 1250}};
  static const struct option longopts[] = {
      {"num-conversations", required_argument, 0, 'n'}, {"seed", required_argument, 0, 's'},
      {"output", required_argument, 0, 'o'},            {"source", required_argument, 0, 'S'},
      {"vocab", required_argument, 0, 'v'},             {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
    switch (c) {
      case 'n': o.synth.num_conversations = parse_count("--num-conversations", optarg); break;
      case 's': o.synth.seed = parse_count("--seed", optarg); break;
      case 'o': o.out_path = optarg; break;
      case 'S':
        if (o.num_sources == MAX_SOURCES)
          die("dataset sharegpt-synth: at most %d --source", MAX_SOURCES);
        o.sources[o.num_sources++] = optarg;
        break;
      case 'v': o.vocab_path = optarg; break;
      case 'h': print_usage(stdout); exit(0);
      case ':': die("dataset sharegpt-synth: %s needs a value (see --help)", argv[optind - 1]);
      default: die("dataset sharegpt-synth: unknown option '%s' (see --help)", argv[optind - 1]);
    }
  }
  if (optind < argc)
    die("dataset sharegpt-synth: unexpected argument '%s' (see --help)", argv[optind]);
  if (!o.out_path) die("dataset sharegpt-synth: -o FILE is required (see --help)");
  if (o.synth.num_conversations == 0)
    die("dataset sharegpt-synth: --num-conversations must be above 0");
  if (o.num_sources == 0) {
    o.num_sources = sizeof DEFAULT_SOURCES / sizeof *DEFAULT_SOURCES;
    memcpy(o.sources, DEFAULT_SOURCES, sizeof DEFAULT_SOURCES);
  }
  return o;
}

// Writes list to path atomically (common/file.h), so readers never see half a file.
static void write_atomically(const json_t *list, const char *path) {
  char *text = json_dumps(list, JSON_INDENT(2));
  CHECK(text != NULL);
  Buf content = {0};
  buf_append_str(&content, text);
  buf_append_str(&content, "\n");
  free(text);
  char err[1024];
  if (!file_write_atomic(path, content.data, content.len, err, sizeof err))
    die("dataset sharegpt-synth: %s", err);
  buf_free(&content);
}

// Loads the written file as `bench --dataset-name sharegpt --num-prompts 1000 --seed 0` would
// and prints its totals beside the study's.
static void report_study_workload(const char *path, const Tokenizer *tok) {
  ShareGptParams p = {.path = path, .num_requests = STUDY_NUM_PROMPTS, .seed = STUDY_SEED,
                      .output_len = -1};
  Dataset d;
  char err[1024];
  if (!dataset_load_sharegpt(&p, tok, &d, err, sizeof err)) die("dataset sharegpt-synth: %s", err);
  if (d.num_oversampled > 0) {
    printf("check: only %zu usable conversations; the study's %d prompts need more "
           "(--num-conversations 1250 gives about 1170)\n",
           d.num_requests - d.num_oversampled, STUDY_NUM_PROMPTS);
    dataset_free(&d);
    return;
  }
  uint64_t input = 0, output = 0;
  for (size_t i = 0; i < d.num_requests; i++) {
    input += d.requests[i].prompt_len;
    output += d.requests[i].expected_output_len;
  }
  printf("check: --num-prompts %d --seed %d: %llu input tokens (study: %d), %.1f output tokens "
         "per request (study: about 196)\n",
         STUDY_NUM_PROMPTS, STUDY_SEED, (unsigned long long)input, STUDY_INPUT_TOKENS,
         (double)output / (double)d.num_requests);
  dataset_free(&d);
}

static int synth_main(int argc, char **argv) {
  SynthOptions o = parse_options(argc, argv);
  char err[1024];
  Tokenizer tok;
  if (!tok_init(&tok, TOK_O200K_HARMONY, o.vocab_path, err, sizeof err))
    die("dataset sharegpt-synth: %s", err);
  ProseCorpus corpus;
  if (!prose_load(&corpus, o.sources, o.num_sources, MIN_PROSE_BYTES, err, sizeof err))
    die("dataset sharegpt-synth: %s", err);
  printf("prose: %zu paragraphs, %zu bytes from %zu files\n", corpus.num_paragraphs,
         corpus.text.len, corpus.num_files);
  json_t *list = synth_sharegpt(&o.synth, &corpus, &tok);
  write_atomically(list, o.out_path);
  struct stat st;
  printf("wrote %zu conversations to %s (%lld bytes)\n", o.synth.num_conversations, o.out_path,
         stat(o.out_path, &st) == 0 ? (long long)st.st_size : -1LL);
  report_study_workload(o.out_path, &tok);
  json_decref(list);
  prose_free(&corpus);
  tok_free(&tok);
  return 0;
}

static const char KINDS[] =
    "usage: gptoss-bench dataset <kind> [options]   (gptoss-bench dataset <kind> --help)\n"
    "  sharegpt-synth   a ShareGPT-format file of real prose with the study's length profile\n";

int dataset_cmd_main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "sharegpt-synth") == 0) return synth_main(argc - 1, argv + 1);
  bool help = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
  if (argc >= 2 && !help) fprintf(stderr, "gptoss-bench dataset: unknown kind '%s'\n", argv[1]);
  fputs(KINDS, help ? stdout : stderr);
  return help ? 0 : 2;
}
