// test_sweep_file.c: sweep files: the schema, defaults, {port} substitution, grids (expanded
// points, their ids, labels, flags and workloads), and that every validation error names the
// file, the line and the key.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep/sweep_file.h"
#include "sweep/sweep_grid.h"

static const char GOOD[] =
    "[sweep]\n"
    "name = study\n"
    "repeat = 3\n"
    "rounds = 2\n"
    "baseline = vllm\n"
    "optimized = tp2\n"
    "\n"
    "[engine.vllm]\n"
    "label = vLLM\n"
    "command = vllm serve openai/gpt-oss-120b --max-model-len 32768 --port {port}\n"
    "env.VLLM_ATTENTION_BACKEND = FLASH_ATTN\n"
    "ready_timeout = 1800\n"
    "\n"
    "[engine.tp2]\n"
    "model = openai/gpt-oss-120b\n"
    "args = --load-format dummy -tp 2 \"--served-model-name\" 'a b'\n"
    "gpus = 2\n"
    "workloads = short\n"
    "\n"
    "[workload.sharegpt]\n"
    "dataset-name = sharegpt\n"
    "dataset-path = datasets/sharegpt-synth.json\n"
    "ignore-eos = true\n"
    "\n"
    "[workload.short]\n"
    "label = short (128/4)\n"
    "random-input-len = 128\n"
    "random_output_len = 4\n"
    "\n"
    "[compare.parallelism]\n"
    "label = parallelism\n"
    "base = vllm\n"
    "candidate = tp2\n"
    "per_gpu = true\n";

static void test_schema(void **state) {
  (void)state;
  SweepFile f;
  char err[512] = "";
  assert_true(sweep_file_parse(&f, "good.ini", GOOD, err, sizeof err));
  assert_string_equal(f.name, "study");
  assert_int_equal(f.repeat, 3);
  assert_int_equal(f.rounds, 2);
  assert_int_equal(f.num_engines, 2);
  assert_int_equal(f.baseline, 0);
  assert_int_equal(f.optimized, 1);
  SweepEngine *v = &f.engines[0], *t = &f.engines[1];
  assert_string_equal(v->label, "vLLM");
  assert_null(v->model);
  assert_int_equal(v->gpus, 1);
  assert_int_equal(v->ready_timeout_sec, 1800);
  assert_int_equal(v->num_env, 1);
  assert_string_equal(v->env[0], "VLLM_ATTENTION_BACKEND=FLASH_ATTN");
  assert_true(v->runs[0] && v->runs[1]);
  assert_string_equal(t->label, "tp2");
  assert_int_equal(t->gpus, 2);
  assert_int_equal(t->ready_timeout_sec, 600);
  assert_false(t->runs[0]);
  assert_true(t->runs[1]);
  assert_int_equal(f.num_workloads, 2);
  assert_string_equal(f.workloads[0].dataset_name, "sharegpt");
  assert_string_equal(f.workloads[1].dataset_name, "random");
  assert_string_equal(f.workloads[1].label, "short (128/4)");
  assert_int_equal(f.workloads[0].num_args, 4);
  assert_string_equal(f.workloads[0].args[3], "--ignore-eos");
  assert_string_equal(f.workloads[1].args[2], "--random-output-len=4");
  assert_int_equal(f.num_comparisons, 1);
  assert_string_equal(f.comparisons[0].label, "parallelism");
  assert_true(f.comparisons[0].per_gpu);
  assert_int_equal(f.comparisons[0].candidate, 1);
  assert_true(strstr(f.text.data, "[engine.vllm]") != NULL);

  char **argv = sweep_engine_argv(v, "/bin/engine", 8123);
  assert_string_equal(argv[0], "vllm");
  assert_string_equal(argv[6], "8123");
  assert_null(argv[7]);
  sweep_argv_free(argv);
  argv = sweep_engine_argv(t, "/bin/engine", 9000);
  const char *want[] = {"/bin/engine", "serve", "openai/gpt-oss-120b", "--port", "9000",
                        "--load-format", "dummy", "-tp", "2", "--served-model-name", "a b"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) assert_string_equal(argv[i], want[i]);
  assert_null(argv[11]);
  sweep_argv_free(argv);
  sweep_file_free(&f);
}

static void test_defaults_and_port(void **state) {
  (void)state;
  SweepFile f;
  char err[512] = "";
  assert_true(sweep_file_parse(&f, "configs/my.run.ini",
                               "[engine.a]\nmodel = gpt-oss-tiny\n[workload.w]\nnum-prompts = 4\n",
                               err, sizeof err));
  assert_string_equal(f.name, "my.run");
  assert_int_equal(f.repeat, 1);
  assert_int_equal(f.rounds, 1);
  assert_int_equal(f.base_port, 0);
  assert_int_equal(f.stop_grace_sec, 10);
  assert_int_equal(f.baseline, -1);
  assert_int_equal(f.optimized, -1);
  assert_string_equal(f.engines[0].label, "a");
  sweep_file_free(&f);
  char *s = sweep_subst_port("--port {port} --x={port}{port}", 42);
  assert_string_equal(s, "--port 42 --x=4242");
  free(s);
  s = sweep_subst_port("{port}", -1);
  assert_string_equal(s, "{port}");
  free(s);
}

// Each bad file must fail with an error that starts with want (file:line: [section] key:).
static const char GRID[] =
    "[engine.e]\n"
    "label = ours\n"
    "model = m\n"
    "args = --x 1\n"
    "args.max-num-batched-tokens = 2048, 8192\n"
    "args.async-scheduling = false,true\n"
    "args.block-size = 16\n"
    "workloads = rates\n"
    "[engine.v]\n"
    "command = vllm serve m --port {port}\n"
    "args.enforce-eager = true\n"
    "[workload.rates]\n"
    "request-rate = 1, inf\n"
    "percentile-metrics = ttft,tpot\n"
    "[workload.fixed]\n"
    "num-prompts = 4\n"
    "[sweep]\n"
    "baseline = e.max-num-batched-tokens-2048.async-scheduling-false\n";

static void assert_words(const SweepEngine *e, const char *want) {
  char got[512] = "";
  for (size_t i = 0; i < e->num_words; i++)
    snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "", e->words[i]);
  assert_string_equal(got, want);
}

// 2 x 2 engine points (the first axis slowest) and 2 workload points, named and labelled after
// the axes of two values; one-value axes only add their flag.
static void test_grid(void **state) {
  (void)state;
  SweepFile f;
  char err[512] = "";
  if (!sweep_file_parse(&f, "grid.ini", GRID, err, sizeof err)) fail_msg("%s", err);
  assert_int_equal(f.num_engines, 5);
  assert_string_equal(f.engines[0].id, "e.max-num-batched-tokens-2048.async-scheduling-false");
  assert_string_equal(f.engines[1].id, "e.max-num-batched-tokens-2048.async-scheduling-true");
  assert_string_equal(f.engines[2].id, "e.max-num-batched-tokens-8192.async-scheduling-false");
  assert_string_equal(f.engines[3].id, "e.max-num-batched-tokens-8192.async-scheduling-true");
  assert_string_equal(f.engines[1].label,
                      "ours (max-num-batched-tokens=2048, async-scheduling=true)");
  assert_string_equal(f.engines[1].grid.base, "e");
  assert_string_equal(f.engines[1].grid.point, "max-num-batched-tokens=2048, async-scheduling=true");
  assert_words(&f.engines[0], "--x 1 --max-num-batched-tokens 2048 --block-size 16");
  assert_words(&f.engines[3],
               "--x 1 --max-num-batched-tokens 8192 --async-scheduling --block-size 16");
  assert_string_equal(f.engines[4].id, "v");  // no list: no grid, its id kept
  assert_null(f.engines[4].grid.base);
  assert_words(&f.engines[4], "vllm serve m --port {port} --enforce-eager");
  assert_int_equal(f.baseline, 0);
  assert_int_equal(f.num_workloads, 3);
  assert_string_equal(f.workloads[0].id, "rates.request-rate-1");
  assert_string_equal(f.workloads[1].id, "rates.request-rate-inf");
  assert_string_equal(f.workloads[1].label, "rates (request-rate=inf)");
  assert_string_equal(f.workloads[1].args[f.workloads[1].num_args - 1], "--request-rate=inf");
  assert_string_equal(f.workloads[1].args[1], "--percentile-metrics=ttft,tpot");  // not a grid
  assert_string_equal(f.workloads[2].id, "fixed");
  for (size_t e = 0; e < 4; e++)  // workloads = rates: both points, not fixed
    assert_true(f.engines[e].runs[0] && f.engines[e].runs[1] && !f.engines[e].runs[2]);
  assert_true(f.engines[4].runs[0] && f.engines[4].runs[1] && f.engines[4].runs[2]);
  assert_true(sweep_grid_matches("e", f.engines[2].id, &f.engines[2].grid));
  assert_false(sweep_grid_matches("v", f.engines[2].id, &f.engines[2].grid));
  sweep_file_free(&f);
}

static void expect_error(const char *text, const char *want) {
  SweepFile f;
  char err[512] = "";
  assert_false(sweep_file_parse(&f, "bad.ini", text, err, sizeof err));
  if (strncmp(err, want, strlen(want)) != 0) fail_msg("got '%s', want '%s...'", err, want);
}

#define ENGINE "[engine.a]\nmodel = m\n"
#define WORKLOAD "[workload.w]\nnum-prompts = 4\n"

static void test_errors(void **state) {
  (void)state;
  expect_error(ENGINE WORKLOAD "[sweep]\nrepeat = 0\n", "bad.ini:6: [sweep] repeat: '0'");
  expect_error(ENGINE WORKLOAD "[sweep]\nrounds = 0\n", "bad.ini:6: [sweep] rounds: '0'");
  expect_error(ENGINE WORKLOAD "[sweep]\nbaseline = nope\n", "bad.ini:6: [sweep] baseline: no [engine.nope]");
  expect_error(ENGINE WORKLOAD "[sweep]\nfoo = 1\n", "bad.ini:6: [sweep] foo: unknown key");
  expect_error(ENGINE WORKLOAD "[sweep]\nname = Bad Name\n", "bad.ini:6: [sweep] name:");
  expect_error(ENGINE "gpus = 0\n" WORKLOAD, "bad.ini:3: [engine.a] gpus: '0'");
  expect_error(ENGINE "ready_timeout = soon\n" WORKLOAD, "bad.ini:3: [engine.a] ready_timeout:");
  expect_error(ENGINE "env.1X = y\n" WORKLOAD, "bad.ini:3: [engine.a] env.1X:");
  expect_error(ENGINE "workloads = w zzz\n" WORKLOAD, "bad.ini:3: [engine.a] workloads: no [workload.zzz]");
  expect_error(ENGINE "args = \"open\n" WORKLOAD, "bad.ini:3: [engine.a] args: unclosed");
  expect_error("[engine.a]\ncommand = vllm serve x\n" WORKLOAD, "bad.ini:2: [engine.a] command: the command must pass");
  expect_error("[engine.a]\nlabel = x\n" WORKLOAD, "bad.ini:2: [engine.a] command: give either");
  expect_error(ENGINE "model = n\n" WORKLOAD, "bad.ini:3: [engine.a] model: given twice (first on line 2)");
  expect_error("[engine.A]\nmodel = m\n" WORKLOAD, "bad.ini:2: [engine.A] model: the id 'A'");
  expect_error(ENGINE "[engines.x]\nk = v\n" WORKLOAD, "bad.ini:4: [engines.x] k: unknown section");
  expect_error(ENGINE WORKLOAD "num-promptz = 4\n", "bad.ini:5: [workload.w] num-promptz: unknown flag");
  expect_error(ENGINE WORKLOAD "random-input-len = -3\n", "bad.ini:5: [workload.w] random-input-len: --random-input-len");
  expect_error(ENGINE WORKLOAD "dataset-name = sharegpt\n", "bad.ini:5: [workload.w] dataset-name: --dataset-name sharegpt needs");
  expect_error(ENGINE WORKLOAD "port = 80\n", "bad.ini:5: [workload.w] port: the sweep sets --port");
  expect_error(ENGINE WORKLOAD "[compare.c]\nbase = a\nper_gpu = yes\n", "bad.ini:7: [compare.c] per_gpu: 'yes'");
  expect_error(ENGINE WORKLOAD "[compare.c]\nbase = a\n", "bad.ini:6: [compare.c] candidate: missing");
  expect_error(ENGINE WORKLOAD "oops\n", "bad.ini:5: not INI syntax");
  expect_error(WORKLOAD, "bad.ini: no [engine.ID]");
  expect_error(ENGINE "args.x = 1,,2\n" WORKLOAD,
               "bad.ini:3: [engine.a] args.x: '1,,2' has an empty value");
  expect_error(ENGINE "args.--x = 1\n" WORKLOAD, "bad.ini:3: [engine.a] args.--x: '--x' is not a flag");
  expect_error(ENGINE "args.x = 1, 2\n" WORKLOAD "[sweep]\nbaseline = a\n",
               "bad.ini:7: [sweep] baseline: [engine.a] is a grid of 2 points: name one of them "
               "(e.g. a.x-1)");
  expect_error(ENGINE WORKLOAD "request-rate = 4, -1\n",
               "bad.ini:5: [workload.w] request-rate: --request-rate");
  expect_error(ENGINE WORKLOAD "request-rate = 4,\n", "bad.ini:5: [workload.w] request-rate: '4,'");
  expect_error(ENGINE "args.x = 1, 2\n[engine.a.x-1]\nmodel = m\n" WORKLOAD,
               "bad.ini: [engine.a.x-1] is named twice once the grids are expanded");
  expect_error(ENGINE "args.a = 0,1,2,3,4,5,6,7\nargs.b = 0,1,2,3,4,5,6,7\n"
               "args.c = 0,1,2,3,4,5,6,7\nargs.d = 0,1,2,3,4,5,6,7\nargs.e = 0,1\n" WORKLOAD,
               "bad.ini: [engine.a]: its grid has more than 4096 points");
  // [slurm] and slurm.KEY (sweep --slurm)
  expect_error(ENGINE "slurm.output = x.out\n" WORKLOAD,
               "bad.ini:3: [engine.a] slurm.output: the sweep sets sbatch's --output itself");
  expect_error(ENGINE "slurm.job_name = x\n" WORKLOAD,
               "bad.ini:3: [engine.a] slurm.job_name: the sweep sets sbatch's --job-name");
  expect_error(ENGINE "slurm.Mem = 8G\n" WORKLOAD,
               "bad.ini:3: [engine.a] slurm.Mem: 'Mem' is not an sbatch option name");
  expect_error(ENGINE WORKLOAD "[slurm]\nmax_jobs = -1\n", "bad.ini:6: [slurm] max_jobs: '-1'");
  expect_error(ENGINE WORKLOAD "[slurm]\npoll_interval = 0\n",
               "bad.ini:6: [slurm] poll_interval: '0'");
  expect_error(ENGINE WORKLOAD "[slurm]\nnodes = 2\n",
               "bad.ini:6: [slurm] nodes: the sweep sets sbatch's --nodes itself");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_schema),
      cmocka_unit_test(test_defaults_and_port),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_grid),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
