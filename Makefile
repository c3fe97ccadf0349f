# Makefile: builds build/bin/gptoss-bench (and the engine once it exists), the tests and the
# benchmarks. Every target first runs `make deps` (scripts/deps.sh), which installs any missing
# Debian package, so a fresh machine needs nothing but gcc, make and this file.
#
#   make              build            make test         build + run every test suite
#   make demo         the demo          make bench        benchmarks (docs/PERF.md)
#   make peers        llama.cpp built (cached) and checked against our engine on the same weights
#   make SANITIZE=1   ASan + UBSan build in build/sanitize (make test SANITIZE=1)
#   make CUDA=0       leave the CUDA backend out even when nvcc exists
#   make BUILD_ROOT=DIR  build somewhere other than build/

# Every CPU builds at once unless the command line says otherwise (make -j1 still runs one job);
# the tests themselves run one suite at a time (scripts/run-tests.sh). Sub-makes share the top
# make's jobs.
ifeq ($(MAKELEVEL),0)
  MAKEFLAGS += -j$(shell nproc)
endif

SANITIZE ?= 0
BUILD_ROOT ?= build
BUILD := $(BUILD_ROOT)
ifeq ($(SANITIZE),1)
  BUILD := $(BUILD_ROOT)/sanitize
  SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
endif

# pkg-config is asked lazily (=, not :=) so that it runs after `deps` has installed the packages.
PKGS := libpcre2-8 jansson libcrypto libcurl libcjson libmicrohttpd inih openblas
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS = $(shell pkg-config --libs $(PKGS))
CMOCKA_LIBS = $(shell pkg-config --libs cmocka)

CFLAGS ?= -O2 -g
ALL_CFLAGS = -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -MMD -MP -Isrc -Iengine -fopenmp \
             -ffp-contract=off $(SAN_FLAGS) $(CFLAGS) $(PKG_CFLAGS)
LDFLAGS += $(SAN_FLAGS) -fopenmp
LDLIBS = $(PKG_LIBS) -lpthread -lm

# CUDA: built for H100/H200 (sm_90a, plus PTX) when nvcc exists; CUDA=0 turns it off.
NVCC ?= $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
CUDA ?= $(if $(NVCC),1,0)
NVCC_FLAGS := -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90a,code=compute_90a
CUDA_SRCS := $(wildcard engine/backend/cuda/*.cu)
ifeq ($(CUDA),1)
  ifeq ($(CUDA_SRCS),)
    $(info cuda: nvcc at $(NVCC); no CUDA sources yet, nothing to compile for the GPU)
  endif
else
  $(info cuda: off (nvcc not found or CUDA=0); the engine is built with the CPU backend only)
endif

LIB_SRCS := $(wildcard src/common/*.c src/text/*.c src/bench/*.c src/sweep/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
LIB := $(BUILD)/lib/libgptoss.a
ENGINE_SRCS := $(filter-out engine/main.c engine/dist/comm_nccl%.c,\
                 $(wildcard engine/*/*.c engine/backend/cpu/*.c))
ENGINE_OBJS := $(ENGINE_SRCS:%.c=$(BUILD)/obj/%.o)
ENGINE_LIB := $(BUILD)/lib/libgptoss-engine.a
BENCH_BIN := $(BUILD)/bin/gptoss-bench
ENGINE_BIN := $(if $(wildcard engine/main.c),$(BUILD)/bin/gptoss-engine)
TEST_SRCS := $(wildcard tests/unit/test_*.c tests/engine/test_*.c)
UNIT_TESTS := $(patsubst %.c,$(BUILD)/tests/%,$(notdir $(TEST_SRCS)))
BENCHMARKS := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(wildcard tests/bench/*.c))

.PHONY: all deps test demo bench peers clean
all: $(BENCH_BIN) $(ENGINE_BIN)

deps:
	@scripts/deps.sh

$(BUILD)/obj/%.o: %.c | deps
	@mkdir -p $(@D)
	@echo CC $<
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	@$(AR) rcs $@ $^

$(ENGINE_LIB): $(ENGINE_OBJS)
	@mkdir -p $(@D)
	@rm -f $@
	@$(AR) rcs $@ $^

$(BENCH_BIN): $(BUILD)/obj/src/main.o $(LIB)
	@mkdir -p $(@D)
	@echo LD $@
	@$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/bin/gptoss-engine: $(BUILD)/obj/engine/main.o $(ENGINE_LIB) $(LIB)
	@mkdir -p $(@D)
	@echo LD $@
	@$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# Unit tests (tests/unit) and engine tests (tests/engine) link both libraries.
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(ENGINE_LIB) $(LIB)
	@mkdir -p $(@D)
	@echo LD $@
	@$(CC) $(LDFLAGS) $^ $(LDLIBS) $(CMOCKA_LIBS) -o $@

$(BUILD)/tests/%: $(BUILD)/obj/tests/engine/%.o $(ENGINE_LIB) $(LIB)
	@mkdir -p $(@D)
	@echo LD $@
	@$(CC) $(LDFLAGS) $^ $(LDLIBS) $(CMOCKA_LIBS) -o $@

$(BUILD)/bench/%: $(BUILD)/obj/tests/bench/%.o $(ENGINE_LIB) $(LIB)
	@mkdir -p $(@D)
	@echo LD $@
	@$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# (the emulated CUDA tests, tests/simt, plain, race-checking (BUILD/simt-thread) and
# memory-checking (BUILD/simt-address), but not under SANITIZE=1)
SIMT_TESTS := $(BUILD)/simt/test_cuda_ops $(BUILD)/simt/gptoss-engine $(BUILD)/simt/test_simt \
              $(BUILD)/simt/test_nccl simt-checks
test: all $(UNIT_TESTS) $(if $(filter 1,$(SANITIZE)),,$(SIMT_TESTS))
	@scripts/run-tests.sh $(BUILD)

.PHONY: simt-checks
# (after the plain build, which makes the C objects they all link: the sub-makes find them made)
simt-checks: all $(BUILD)/simt/test_cuda_ops $(BUILD)/simt/test_simt
	@$(MAKE) --no-print-directory SIMT_SANITIZER=thread $(BUILD)/simt-thread/test_cuda_ops \
	  $(BUILD)/simt-thread/test_simt $(BUILD)/simt-thread/test_nccl
	@$(MAKE) --no-print-directory SIMT_SANITIZER=address $(BUILD)/simt-address/test_cuda_ops \
	  $(BUILD)/simt-address/test_simt $(BUILD)/simt-address/test_nccl \
	  $(BUILD)/simt-address/gptoss-engine

demo: all
	@scripts/demo.sh $(BUILD)

bench: all $(BENCHMARKS)
	@scripts/bench.sh $(BUILD)

peers: all
	@scripts/peers.sh $(BUILD)

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
# every target, the objects and generated sources included, is kept (a second .SECONDARY line
# with prerequisites would turn this off: make would delete and rebuild the test objects)
.SECONDARY:

# ---------------------------------------------------------------------------------------------
# Fuzzing (tests/fuzz). Each tests/fuzz/fuzz_NAME.c is one libFuzzer target, seeded from the
# committed corpus tests/fuzz/corpus/NAME (seeds and saved crash inputs).
#   make test                 also replays every corpus with the normal compiler and no libFuzzer:
#                             BUILD/tests/test_fuzz_NAME (target + tests/fuzz/replay.c)
#   make fuzz                 clang, libFuzzer, ASan + UBSan in BUILD_ROOT/fuzz, then each target
#   make fuzz FUZZ_SECONDS=N  for N seconds (default 60), one at a time (scripts/fuzz.sh);
#                             installs clang first if it is missing (scripts/deps.sh fuzz)
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_BUILD := $(BUILD_ROOT)/fuzz
FUZZ_SRCS := $(filter-out tests/fuzz/fuzz_util.c,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRCS))
FUZZ_REPLAYS := $(FUZZ_NAMES:%=$(BUILD)/tests/test_fuzz_%)
FUZZ_BINS := $(FUZZ_NAMES:%=$(FUZZ_BUILD)/bin/fuzz_%)
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS = -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -MMD -MP -Isrc -Iengine -O1 -g \
              -fsanitize=fuzzer-no-link $(FUZZ_SAN) $(PKG_CFLAGS)
# What the targets reach: the shared library, the API's request parsing, the safetensors reader.
FUZZ_LIB_SRCS := $(LIB_SRCS) $(wildcard engine/api/*.c) engine/model/safetensors.c
FUZZ_LIB := $(FUZZ_BUILD)/lib/libgptoss-fuzz.a

.PHONY: fuzz fuzz-deps
test: $(FUZZ_REPLAYS)

$(BUILD)/tests/test_fuzz_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(BUILD)/obj/tests/fuzz/replay.o \
                            $(BUILD)/obj/tests/fuzz/fuzz_util.o $(ENGINE_LIB) $(LIB)
	@mkdir -p $(@D)
	@echo LD $@
	@$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

fuzz-deps: deps  # (after deps: two apt-get runs at once would meet dpkg's lock)
	@scripts/deps.sh fuzz

$(FUZZ_BUILD)/obj/%.o: %.c | fuzz-deps
	@mkdir -p $(@D)
	@echo CC-FUZZ $<
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_LIB): $(FUZZ_LIB_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
	@mkdir -p $(@D)
	@rm -f $@
	@$(AR) rcs $@ $^

$(FUZZ_BUILD)/bin/fuzz_%: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_%.o \
                          $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_util.o $(FUZZ_LIB)
	@mkdir -p $(@D)
	@echo LD $@
	@$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) $^ $(PKG_LIBS) -lpthread -lm -o $@

fuzz: $(FUZZ_BINS)
	@scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_NAMES)

-include $(shell find $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)

# ---------------------------------------------------------------------------------------------
# Test tools (tests/tools): small libc-only clients the e2e scripts drive (raw HTTP bytes, stream
# disconnects), built into BUILD/tools before `make test` runs.
#   make stress    the engine load and fault test at full size (tests/e2e/engine_load.sh with
#                  STRESS=1: 2,000 concurrent streams, 10,000 requests cut at random points)
TOOLS := $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(wildcard tests/tools/*.c))

.PHONY: tools stress
tools: $(TOOLS)
test: $(TOOLS)

$(BUILD)/tools/%: $(BUILD)/obj/tests/tools/%.o
	@mkdir -p $(@D)
	@echo LD $@
	@$(CC) $(LDFLAGS) $^ -o $@

stress: all $(TOOLS)
	@STRESS=1 bash tests/e2e/engine_load.sh $(BUILD)

# ---------------------------------------------------------------------------------------------
# CUDA backend (engine/backend/cuda). CUDA=1 (nvcc found, the default where it exists): the .cu
# files join the engine library, built for sm_90a plus PTX (NVCC_FLAGS above), and every binary
# links cudart and cuBLAS (as needed: binaries that never call CUDA do not load them). CUDA=0:
# cuda_stub.c stands in (cuda_device_count() is 0, cuda_backend_create fails with the reason),
# so the engine, tests and benchmarks link the same functions either way.
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
ifeq ($(CUDA),1)
  CUDA_OBJS := $(CUDA_SRCS:%.cu=$(BUILD)/obj/%.o)
  CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 \
               -Wl,--push-state,--as-needed -lcublas -lcudart -lstdc++ -Wl,--pop-state
else
  CUDA_OBJS := $(BUILD)/obj/engine/backend/cuda/cuda_stub.o
  CUDA_LIBS :=
endif
# NCCL (the communicator for -tp/-pp on CUDA, engine/dist/comm_nccl.c) with the CUDA build when
# the toolkit has nccl.h; otherwise comm_nccl_stub.c, which refuses with the reason.
NCCL := $(if $(and $(filter 1,$(CUDA)),$(wildcard $(CUDA_HOME)/include/nccl.h)),1,0)
ifeq ($(NCCL),1)
  CUDA_OBJS += $(BUILD)/obj/engine/dist/comm_nccl.o
  CUDA_LIBS += -Wl,--push-state,--as-needed -lnccl -Wl,--pop-state
$(BUILD)/obj/engine/dist/comm_nccl.o: ALL_CFLAGS += -I$(CUDA_HOME)/include
else
  CUDA_OBJS += $(BUILD)/obj/engine/dist/comm_nccl_stub.o
endif
# -Werror for the host side too; nvcc's own notes about the gencode list stay quiet.
NVCC_ALL_FLAGS = $(NVCC_FLAGS) -lineinfo -Isrc -Iengine -MMD -MP -Werror all-warnings \
                 -Xcompiler -Wall,-Wextra -Wno-deprecated-gpu-targets
LDLIBS += $(CUDA_LIBS)

$(ENGINE_LIB): $(CUDA_OBJS)

$(BUILD)/obj/%.o: %.cu | deps
	@mkdir -p $(@D)
	@echo NVCC $<
	@$(NVCC) $(NVCC_ALL_FLAGS) -c $< -o $@

# ---------------------------------------------------------------------------------------------
# The CUDA backend on the CPU (tests/simt): every engine/backend/cuda/*.cu turned into C++ by
# tests/simt/transform.py (launches and shared arrays only) and compiled for the host SIMT
# emulator, and test_cuda_ops linked against it: its tests then compare the backend's own
# kernels with their CPU twins with no GPU and no nvcc (logic only: docs/ARCHITECTURE.md). The
# whole file takes about 13 minutes on 2 cores; EMU_TESTS=a,b runs the tests whose names hold
# a or b; SIMT_ORDER=reverse runs each launch's blocks and threads last to first. `make test`
# runs the quick ones (scripts/run-tests.sh). Then the engine built on it
# (tests/e2e/engine_cuda_emu.sh; serving too, except on the race-checking build).
#   make test-cuda-emu [EMU_TESTS=test_moe_wide,test_attention] [SIMT_SANITIZER=thread|address]
# SIMT_SANITIZER=thread builds it in BUILD/simt-thread with the kernels under ThreadSanitizer,
# each GPU thread a fiber of its own, ordered only by barriers (tests/simt/racecheck.h): a race a
# missing __syncthreads, __syncwarp or cp.async wait would cause on a GPU is reported, as
# compute-sanitizer's racecheck would; SIMT_SANITIZER=address in BUILD/simt-address under
# AddressSanitizer (tests/simt/memcheck.h): an access past a device buffer or shared memory is
# reported, as its memcheck would (tests/e2e/simt_checks.sh proves both catch what they should).
SIMT_SANITIZER ?=
SIMT := $(BUILD)/simt$(if $(SIMT_SANITIZER),-$(SIMT_SANITIZER))
SIMT_CXXFLAGS := -std=c++17 -O2 -g -w -MMD -MP -Itests/simt/include -Itests/simt -Iengine -Isrc
ifeq ($(SIMT_SANITIZER),thread)
  SIMT_SAN_FLAGS := -fsanitize=thread
  SIMT_CXXFLAGS += -DSIMT_RACECHECK
else ifeq ($(SIMT_SANITIZER),address)
  SIMT_SAN_FLAGS := -fsanitize=address
  SIMT_CXXFLAGS += -DSIMT_MEMCHECK
else ifneq ($(SIMT_SANITIZER),)
  $(error SIMT_SANITIZER=$(SIMT_SANITIZER): SIMT_SANITIZER=thread or address (or none))
endif
SIMT_GEN_OBJS := $(patsubst engine/backend/cuda/%.cu,$(SIMT)/gen/%.o,$(CUDA_SRCS))
SIMT_OBJS := $(SIMT_GEN_OBJS) $(SIMT)/simt.o $(SIMT)/runtime.o $(SIMT)/filter.o $(SIMT)/nccl.o \
             $(SIMT)/comm_nccl.o
.PHONY: test-cuda-emu

$(SIMT)/gen/%.cc: engine/backend/cuda/%.cu tests/simt/transform.py
	@mkdir -p $(@D)
	@python3 tests/simt/transform.py $< $@

$(SIMT)/gen/%.o: $(SIMT)/gen/%.cc
	@echo CXX-SIMT $<
	@$(CXX) $(SIMT_CXXFLAGS) $(SIMT_SAN_FLAGS) -c $< -o $@

# engine/dist/comm_nccl.c itself, on the emulator's NCCL (tests/simt/include/nccl.h, nccl.cc):
# -tp and -pp on the emulated devices (SIMT_DEVICES=N) run the communicator a GPU build runs
$(SIMT)/comm_nccl.o: engine/dist/comm_nccl.c | deps
	@mkdir -p $(@D)
	@echo CC-SIMT $<
	@$(CC) -Itests/simt/include $(ALL_CFLAGS) $(SIMT_SAN_FLAGS) -c $< -o $@

# the fibers' own bookkeeping is shared by design: not instrumented (racecheck.h)
$(SIMT)/simt.o: SIMT_SAN_FLAGS :=
$(SIMT)/%.o: tests/simt/%.cc
	@mkdir -p $(@D)
	@echo CXX-SIMT $<
	@$(CXX) $(SIMT_CXXFLAGS) $(SIMT_SAN_FLAGS) -c $< -o $@

$(SIMT)/test_cuda_ops: $(BUILD)/obj/tests/engine/test_cuda_ops.o $(SIMT_OBJS) $(ENGINE_OBJS) $(LIB)
	@echo LD $@
	@$(CXX) $(LDFLAGS) $(SIMT_SAN_FLAGS) -Wl,--wrap=_cmocka_run_group_tests $^ $(PKG_LIBS) -lpthread -lm \
	  $(CMOCKA_LIBS) -o $@

# The emulator's own tests (tests/simt/test_simt.cu, CUDA turned into C++ as the backend is).
$(SIMT)/tests/test_simt.cc: tests/simt/test_simt.cu tests/simt/transform.py
	@mkdir -p $(@D)
	@python3 tests/simt/transform.py $< $@

$(SIMT)/tests/test_simt.o: $(SIMT)/tests/test_simt.cc
	@echo CXX-SIMT $<
	@$(CXX) $(SIMT_CXXFLAGS) $(SIMT_SAN_FLAGS) -c $< -o $@

$(SIMT)/test_simt: $(SIMT)/tests/test_simt.o $(SIMT)/simt.o $(SIMT)/runtime.o
	@echo LD $@
	@$(CXX) $(LDFLAGS) $(SIMT_SAN_FLAGS) $^ $(CMOCKA_LIBS) -o $@

# The emulated NCCL's own tests (tests/simt/test_nccl.cc).
$(SIMT)/test_nccl: $(SIMT)/test_nccl.o $(SIMT)/nccl.o $(SIMT)/runtime.o $(SIMT)/simt.o \
                   $(BUILD)/obj/engine/dist/comm_threads.o $(LIB)
	@echo LD $@
	@$(CXX) $(LDFLAGS) $(SIMT_SAN_FLAGS) $^ $(CMOCKA_LIBS) -lpthread -o $@

# The engine itself on the emulated backend (tests/e2e/engine_cuda_emu.sh: the golden checkpoints
# with --device cuda).
$(SIMT)/gptoss-engine: $(BUILD)/obj/engine/main.o $(filter-out $(SIMT)/filter.o,$(SIMT_OBJS)) \
                       $(ENGINE_OBJS) $(LIB)
	@echo LD $@
	@$(CXX) $(LDFLAGS) $(SIMT_SAN_FLAGS) $^ $(PKG_LIBS) -lpthread -lm -o $@

test-cuda-emu: $(SIMT)/test_simt $(SIMT)/test_nccl $(SIMT)/test_cuda_ops $(SIMT)/gptoss-engine
	@$(SIMT)/test_simt
	@$(SIMT)/test_nccl
	@$(if $(filter thread,$(SIMT_SANITIZER)),TEST_CPU_TWIN_THREADS=1) EMU_TESTS=$(EMU_TESTS) $(SIMT)/test_cuda_ops
	@SIMT_SANITIZER=$(SIMT_SANITIZER) EMU_SERVE=$(if $(filter thread,$(SIMT_SANITIZER)),0,1) \
	  bash tests/e2e/engine_cuda_emu.sh $(BUILD)
	@$(if $(SIMT_SANITIZER),bash tests/e2e/simt_checks.sh $(BUILD))

-include $(shell find $(SIMT) -name '*.d' 2>/dev/null)

# ---------------------------------------------------------------------------------------------
# Valgrind (scripts/memcheck.sh): the engine's generate, bench against mock-server and a small
# sweep and the engine's server, each under memcheck; fails on any memory error or definite
# leak. 5-8 minutes.
#   make memcheck   (installs valgrind first if it is missing: scripts/deps.sh memcheck)
.PHONY: memcheck
memcheck: all
	@scripts/deps.sh memcheck
	@scripts/memcheck.sh $(BUILD)
