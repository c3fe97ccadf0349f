// test_sweep_slurm.c: the Slurm side of sweep files ([slurm], slurm.KEY) and the sbatch flags an
// engine's job gets from them: the command line over [slurm], the engine over both, false
// leaving an option out, --gres from the engine's gpus (test_sweep_file.c has the errors).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "sweep/sweep_slurm.h"

static const char FILE_TEXT[] =
    "[slurm]\n"
    "partition = gpu\n"
    "account = study\n"
    "max_jobs = 4\n"
    "poll_interval = 30\n"
    "exclusive = true\n"
    "cpus_per_task = 16\n"
    "constraint = h100\n"
    "\n"
    "[engine.tp2]\n"
    "model = openai/gpt-oss-120b\n"
    "gpus = 2\n"
    "slurm.constraint = h200\n"
    "slurm.exclusive = false\n"
    "\n"
    "[engine.cpu]\n"
    "model = gpt-oss-tiny\n"
    "slurm.gres = none\n"
    "slurm.mem = 8G\n"
    "\n"
    "[workload.w]\n"
    "num-prompts = 4\n";

// flags must equal want[0 .. n) and end there.
static void expect_flags(char **flags, const char *const *want, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!flags[i]) fail_msg("flag %zu missing, want '%s'", i, want[i]);
    assert_string_equal(flags[i], want[i]);
  }
  if (flags[n]) fail_msg("unexpected flag '%s'", flags[n]);
  sweep_argv_free(flags);
}

static void test_keys_and_flags(void **state) {
  (void)state;
  SweepFile f;
  char err[512] = "";
  assert_true(sweep_file_parse(&f, "study.ini", FILE_TEXT, err, sizeof err));
  assert_int_equal(f.slurm.max_jobs, 4);
  assert_int_equal(f.slurm.poll_interval_sec, 30);
  assert_string_equal(f.slurm.gres, "gpu");
  assert_int_equal(f.slurm.num_options, 5);
  assert_string_equal(f.slurm.options[4].key, "constraint");
  assert_string_equal(f.slurm.options[3].key, "cpus-per-task");  // '_' read as '-'

  SweepSlurmOptions cli = {.partition = "debug", .time = "2:00:00", .max_jobs = -1};
  const char *const tp2[] = {"--job-name=gptoss-study-tp2", "--output=/runs/r/tp2/slurm-%j.out",
                             "--chdir=/work", "--nodes=1", "--no-requeue", "--gres=gpu:2",
                             "--partition=debug", "--time=2:00:00", "--account=study",
                             "--cpus-per-task=16", "--constraint=h200"};
  expect_flags(sweep_slurm_sbatch_flags(&f, &cli, &f.engines[0], "/runs/r", "/work", "study"),
               tp2, sizeof tp2 / sizeof *tp2);
  SweepSlurmOptions none = {.max_jobs = -1};
  const char *const cpu[] = {"--job-name=gptoss-study-cpu", "--output=/runs/r/cpu/slurm-%j.out",
                             "--chdir=/work", "--nodes=1", "--no-requeue", "--partition=gpu",
                             "--account=study", "--exclusive", "--cpus-per-task=16",
                             "--constraint=h100", "--mem=8G"};
  expect_flags(sweep_slurm_sbatch_flags(&f, &none, &f.engines[1], "/runs/r", "/work", "study"),
               cpu, sizeof cpu / sizeof *cpu);
  const char *const probe[] = {"--job-name=gptoss-study-probe",
                               "--output=/runs/r/slurm-probe-%j.out", "--chdir=/work",
                               "--nodes=1", "--no-requeue", "--partition=gpu", "--account=study",
                               "--exclusive", "--cpus-per-task=16", "--constraint=h100"};
  expect_flags(sweep_slurm_sbatch_flags(&f, &none, NULL, "/runs/r", "/work", "study"), probe,
               sizeof probe / sizeof *probe);
  sweep_file_free(&f);
}

static void test_defaults(void **state) {
  (void)state;
  SweepFile f;
  char err[512] = "";
  const char *text = "[engine.a]\nmodel = m\n[workload.w]\nnum-prompts = 4\n";
  assert_true(sweep_file_parse(&f, "a.ini", text, err, sizeof err));
  assert_int_equal(f.slurm.max_jobs, 0);
  assert_int_equal(f.slurm.poll_interval_sec, 5);
  assert_int_equal(f.slurm.num_options, 0);
  SweepSlurmOptions none = {.max_jobs = -1};
  const char *const a[] = {"--job-name=gptoss-a-a", "--output=/r/a/slurm-%j.out", "--chdir=/w",
                           "--nodes=1", "--no-requeue", "--gres=gpu:1"};
  expect_flags(sweep_slurm_sbatch_flags(&f, &none, &f.engines[0], "/r", "/w", "a"), a,
               sizeof a / sizeof *a);
  sweep_file_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_keys_and_flags),
      cmocka_unit_test(test_defaults),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
