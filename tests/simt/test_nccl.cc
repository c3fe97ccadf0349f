// test_nccl.cc (tests/simt): the emulated NCCL's own guarantees (include/nccl.h, nccl.cc), on
// which the -tp and -pp checks of the emulated engine rest: ranks on threads, one emulated device
// each (SIMT_DEVICES=3), meet at each call; an all-reduce sums in rank order, so every rank gets
// the same bits; all-gather, broadcast, send and receive move the bytes NCCL's would; a captured
// call runs again, on the buffers' values then, at each launch of its graph; collectives that do
// not match end the process naming both; bad devices are refused at set-up.
#include <cuda_runtime.h>
#include <nccl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <thread>
#include <vector>

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

enum { kRanks = 3 };

// Runs body(rank, comm) on kRanks threads, each on its own device, with one clique's
// communicators. Device memory is host memory here, so the bodies read their buffers directly.
static void on_ranks(const std::function<void(int, ncclComm_t)> &body) {
  ncclComm_t comms[kRanks];
  const int devices[kRanks] = {0, 1, 2};
  assert_int_equal(ncclCommInitAll(comms, kRanks, devices), ncclSuccess);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; r++)
    threads.emplace_back([&, r] {
      cudaSetDevice(r);
      body(r, comms[r]);
    });
  for (std::thread &t : threads) t.join();
  for (ncclComm_t c : comms) assert_int_equal(ncclCommDestroy(c), ncclSuccess);
}

static float *device_floats(size_t n) {
  float *p = nullptr;
  if (cudaMalloc((void **)&p, n * sizeof *p) != cudaSuccess) abort();
  return p;
}

static void test_all_reduce_sums_in_rank_order(void **state) {
  (void)state;
  // (1e8 + 1) - 1e8 is 0 in float (1e8 + 1 rounds to 1e8) while (1e8 - 1e8) + 1 is 1: a sum
  // that started at each rank's own value would not give every rank the same
  const float first[kRanks] = {1e8f, 1.0f, -1e8f};
  float got[kRanks][2];
  on_ranks([&](int r, ncclComm_t comm) {
    float *buf = device_floats(2);
    buf[0] = first[r], buf[1] = (float)(r + 1);
    assert_int_equal(ncclAllReduce(buf, buf, 2, ncclFloat, ncclSum, comm, nullptr), ncclSuccess);
    got[r][0] = buf[0], got[r][1] = buf[1];
    cudaFree(buf);
  });
  for (int r = 0; r < kRanks; r++) {
    assert_true(got[r][0] == 0.0f);
    assert_true(got[r][1] == 6.0f);
  }
}

static void test_all_gather_and_broadcast(void **state) {
  (void)state;
  float gathered[kRanks][2 * kRanks];
  char told[kRanks][6];
  on_ranks([&](int r, ncclComm_t comm) {
    float *mine = device_floats(2), *all = device_floats(2 * kRanks);
    mine[0] = (float)r, mine[1] = r + 0.5f;
    assert_int_equal(ncclAllGather(mine, all, 2, ncclFloat, comm, nullptr), ncclSuccess);
    memcpy(gathered[r], all, sizeof gathered[r]);
    char *text = (char *)all;
    snprintf(text, 6, "rank%d", r);
    assert_int_equal(ncclBroadcast(text, text, 6, ncclChar, 1, comm, nullptr), ncclSuccess);
    memcpy(told[r], text, 6);
    cudaFree(mine);
    cudaFree(all);
  });
  const float want[2 * kRanks] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f};
  for (int r = 0; r < kRanks; r++) {
    assert_memory_equal(gathered[r], want, sizeof want);
    assert_string_equal(told[r], "rank1");
  }
}

static void test_send_meets_its_receive(void **state) {
  (void)state;
  float got = 0;
  on_ranks([&](int r, ncclComm_t comm) {
    float *buf = device_floats(1);
    buf[0] = 42.0f + (float)r;
    if (r == 0) assert_int_equal(ncclSend(buf, 4, ncclChar, 2, comm, nullptr), ncclSuccess);
    if (r == 2) {
      assert_int_equal(ncclRecv(buf, 4, ncclChar, 0, comm, nullptr), ncclSuccess);
      got = buf[0];
    }
    if (r == 1)  // a rank is not its own peer
      assert_int_equal(ncclSend(buf, 4, ncclChar, 1, comm, nullptr), ncclInvalidUsage);
    cudaFree(buf);
  });
  assert_true(got == 42.0f);
}

static void test_graph_replays_the_collective(void **state) {
  (void)state;
  float got[kRanks][2];
  on_ranks([&](int r, ncclComm_t comm) {
    float *buf = device_floats(1);
    cudaStream_t stream;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    buf[0] = -1.0f;
    assert_int_equal(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    assert_int_equal(ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, comm, stream), ncclSuccess);
    assert_int_equal(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    assert_true(buf[0] == -1.0f);  // recorded, not run
    cudaGraphInstantiate(&exec, graph, 0);
    for (int launch = 0; launch < 2; launch++) {
      buf[0] = (float)((launch + 1) * (r + 1));
      assert_int_equal(cudaGraphLaunch(exec, stream), cudaSuccess);
      got[r][launch] = buf[0];
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
    cudaFree(buf);
  });
  for (int r = 0; r < kRanks; r++) {
    assert_true(got[r][0] == 6.0f);   // 1 + 2 + 3
    assert_true(got[r][1] == 12.0f);  // 2 + 4 + 6
  }
}

static void test_calls_that_do_not_match_end_the_process(void **state) {
  (void)state;
  int err[2];
  assert_int_equal(pipe(err), 0);
  const pid_t child = fork();
  if (child == 0) {
    dup2(err[1], 2);
    on_ranks([](int r, ncclComm_t comm) {
      float *buf = device_floats(kRanks);
      if (r == 1)
        ncclAllGather(buf, buf, 1, ncclFloat, comm, nullptr);
      else
        ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, comm, nullptr);
    });
    _exit(0);
  }
  close(err[1]);
  char text[1024] = {0};
  size_t used = 0;
  ssize_t n;
  while (used < sizeof text - 1 && (n = read(err[0], text + used, sizeof text - 1 - used)) > 0)
    used += (size_t)n;
  close(err[0]);
  int status = 0;
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
  assert_non_null(strstr(text, "NCCL calls that do not match"));
  assert_non_null(strstr(text, "all-gathers 4 bytes a rank"));
  assert_non_null(strstr(text, "all-reduces 4 bytes"));
}

static void test_set_up_refuses_bad_devices(void **state) {
  (void)state;
  ncclComm_t comms[2];
  const int twice[2] = {1, 1}, missing[2] = {0, kRanks};
  assert_int_equal(ncclCommInitAll(comms, 2, twice), ncclInvalidUsage);
  assert_int_equal(ncclCommInitAll(comms, 2, missing), ncclInvalidArgument);
}

int main(void) {
  setenv("SIMT_DEVICES", "3", 1);  // before the runtime first reads it
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_reduce_sums_in_rank_order),
      cmocka_unit_test(test_all_gather_and_broadcast),
      cmocka_unit_test(test_send_meets_its_receive),
      cmocka_unit_test(test_graph_replays_the_collective),
      cmocka_unit_test(test_calls_that_do_not_match_end_the_process),
      cmocka_unit_test(test_set_up_refuses_bad_devices),
  };
  return cmocka_run_group_tests_name("the emulated NCCL", tests, NULL, NULL);
}
