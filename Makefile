# Makefile: builds build/bin/gptoss-bench (and the engine once it exists), the tests and the
# benchmarks. Every target first runs `make deps` (scripts/deps.sh), which installs any missing
# Debian package, so a fresh machine needs nothing but gcc, make and this file.
#
#   make              build            make test         build + run every test suite
#   make demo         the demo          make bench        benchmarks (docs/PERF.md)
#   make SANITIZE=1   ASan + UBSan build in build/sanitize (make test SANITIZE=1)
#   make CUDA=0       leave the CUDA backend out even when nvcc exists
#   make BUILD_ROOT=DIR  build somewhere other than build/

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
ENGINE_SRCS := $(filter-out engine/main.c,$(wildcard engine/*/*.c engine/backend/cpu/*.c))
ENGINE_OBJS := $(ENGINE_SRCS:%.c=$(BUILD)/obj/%.o)
ENGINE_LIB := $(BUILD)/lib/libgptoss-engine.a
BENCH_BIN := $(BUILD)/bin/gptoss-bench
ENGINE_BIN := $(if $(wildcard engine/main.c),$(BUILD)/bin/gptoss-engine)
TEST_SRCS := $(wildcard tests/unit/test_*.c tests/engine/test_*.c)
UNIT_TESTS := $(patsubst %.c,$(BUILD)/tests/%,$(notdir $(TEST_SRCS)))
BENCHMARKS := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(wildcard tests/bench/*.c))

.PHONY: all deps test demo bench clean
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

test: all $(UNIT_TESTS)
	@scripts/run-tests.sh $(BUILD)

demo: all
	@scripts/demo.sh $(BUILD)

bench: all $(BENCHMARKS)
	@scripts/bench.sh $(BUILD)

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
.SECONDARY:
