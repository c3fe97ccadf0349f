// test_cpu_cores.c: the CPUs a process may use: cgroup quota texts (v2 cpu.max, v1 cfs files)
// against hand-computed CPUs, and the affinity set as sched_setaffinity leaves it.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sched.h>

#include "common/cpu_cores.h"

static void test_quota_texts(void **state) {
  (void)state;
  assert_float_equal(cpu_cores_quota_v2("200000 100000\n"), 2.0, 1e-12);
  assert_float_equal(cpu_cores_quota_v2("150000 100000"), 1.5, 1e-12);
  assert_float_equal(cpu_cores_quota_v2("max 100000\n"), 0.0, 0);
  assert_float_equal(cpu_cores_quota_v2(""), 0.0, 0);
  assert_float_equal(cpu_cores_quota_v2("12x 100000"), 0.0, 0);
  assert_float_equal(cpu_cores_quota_v1("50000\n", "100000\n"), 0.5, 1e-12);
  assert_float_equal(cpu_cores_quota_v1("-1\n", "100000\n"), 0.0, 0);
  assert_float_equal(cpu_cores_quota_v1("", ""), 0.0, 0);
}

// Pinned to the first CPU it may use, the process sees one CPU; restored, all of them again.
static void test_affinity(void **state) {
  (void)state;
  cpu_set_t saved;
  assert_int_equal(sched_getaffinity(0, sizeof saved, &saved), 0);
  int cpus[CPU_SETSIZE];
  const int n = cpu_cores_allowed(cpus, CPU_SETSIZE);
  assert_int_equal(n, CPU_COUNT(&saved));
  for (int i = 0; i < n; i++) assert_true(CPU_ISSET(cpus[i], &saved));
  for (int i = 1; i < n; i++) assert_true(cpus[i] > cpus[i - 1]);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus[0], &one);
  assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
  int first = -1;
  assert_int_equal(cpu_cores_allowed(&first, 1), 1);
  assert_int_equal(first, cpus[0]);
  assert_int_equal(cpu_cores_usable(), 1);
  assert_int_equal(sched_setaffinity(0, sizeof saved, &saved), 0);
  assert_int_equal(cpu_cores_allowed(NULL, 0), n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quota_texts),
      cmocka_unit_test(test_affinity),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
