// main.c: the gptoss-engine command line: picks the subcommand and hands it its arguments.
#include "common/check.h"
#include "common/subcommand.h"
#include "cli/export_cmd.h"
#include "cli/generate_cmd.h"
#include "cli/serve_cmd.h"

static const Subcommand SUBCOMMANDS[] = {
    {"serve", serve_cmd_main, "OpenAI-compatible server (flags compatible with vllm serve)"},
    {"generate", generate_cmd_main, "offline generation of one prompt (JSON line out)"},
    {"export-checkpoint", export_cmd_main,
     "a preset's dummy weights as a checkpoint folder (config.json + model.safetensors)"},
};

int main(int argc, char **argv) {
  check_set_program("gptoss-engine");
  return subcommand_dispatch("gptoss-engine", SUBCOMMANDS, sizeof SUBCOMMANDS / sizeof *SUBCOMMANDS,
                             argc, argv);
}
