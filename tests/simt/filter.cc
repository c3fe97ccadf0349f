// filter.cc (tests/simt): linked with -Wl,--wrap=_cmocka_run_group_tests into the emulated
// test_cuda_ops, it runs only the tests whose names contain one of EMU_TESTS's comma-separated
// parts (all without it), so one slow group can be left out or run alone.
#include <stdlib.h>
#include <string.h>
#include <string>
#include <vector>
extern "C" {
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
int __real__cmocka_run_group_tests(const char *, const struct CMUnitTest *, size_t,
                                   CMFixtureFunction, CMFixtureFunction);
int __wrap__cmocka_run_group_tests(const char *name, const struct CMUnitTest *tests, size_t n,
                                   CMFixtureFunction setup, CMFixtureFunction teardown) {
  const char *want = getenv("EMU_TESTS");
  if (!want || !*want) return __real__cmocka_run_group_tests(name, tests, n, setup, teardown);
  static std::vector<CMUnitTest> kept;
  for (size_t i = 0; i < n; i++) {
    std::string w = want;
    size_t at = 0;
    bool keep = false;
    while (at <= w.size()) {
      size_t c = w.find(',', at);
      if (c == std::string::npos) c = w.size();
      std::string part = w.substr(at, c - at);
      if (!part.empty() && strstr(tests[i].name, part.c_str())) keep = true;
      at = c + 1;
    }
    if (keep) kept.push_back(tests[i]);
  }
  return __real__cmocka_run_group_tests(name, kept.data(), kept.size(), setup, teardown);
}
}
