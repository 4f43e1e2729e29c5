# gpujit — build, test and run.  `make test` is what CI runs: it installs
# what is missing (Debian packages), builds, and runs the busted suite.

LLVM_CONFIG ?= llvm-config-15
LUAJIT      ?= luajit
LUA_INC     ?= /usr/include/luajit-2.1
BUILD       ?= build
CC          ?= cc

# Debian packages the project needs, each checked before installing.
DEPS_PKGS = luajit libluajit-5.1-dev llvm-15-dev lua-busted lua-check \
            pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo

LLVM_CFLAGS  = $(shell $(LLVM_CONFIG) --cflags 2>/dev/null)
LLVM_LDFLAGS = $(shell $(LLVM_CONFIG) --ldflags 2>/dev/null)
LLVM_LIBS    = $(shell $(LLVM_CONFIG) --libs 2>/dev/null)

CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -fPIC -fvisibility=hidden -Wall -Wextra -Werror \
           -I$(LUA_INC) -Isrc -Ibackends $(LLVM_CFLAGS)
LDFLAGS += -shared $(LLVM_LDFLAGS)
LDLIBS  += $(LLVM_LIBS) -lpthread -ldl -lm

SRCS = $(wildcard src/*.c) $(wildcard backends/*.c)
OBJS = $(patsubst %.c,$(BUILD)/obj/%.o,$(SRCS))
CORE = $(BUILD)/gpujit/core.so

LUA_ENV = LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="$(BUILD)/?.so;;"

.PHONY: all deps test run lint clean fuzz fuzz-frontend

all: $(CORE)

$(CORE): $(OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(OBJS) $(LDLIBS)

$(BUILD)/obj/%.o: %.c $(wildcard src/*.h) $(wildcard backends/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

# Install the Debian packages that are missing; a no-op when all are there.
deps:
	@missing=""; for p in $(DEPS_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else echo "make deps: all present"; fi

# The suite runs every spec on both compiling backends (spec/helpers.lua);
# PoCL provides the OpenCL device on machines without a GPU.  The
# environment's GPUJIT_SPEC_BACKENDS, when set, wins.
GPUJIT_SPEC_BACKENDS ?= cpu,opencl

test: deps
	$(MAKE) all
	$(LUA_ENV) GPUJIT_SPEC_BACKENDS=$(GPUJIT_SPEC_BACKENDS) sh spec/run.sh

run: deps
	$(MAKE) all
	$(LUA_ENV) $(LUAJIT) examples/saxpy.lua

lint:
	luacheck lua spec examples

# Differential fuzzing (docs/fuzzing.md): N generated kernels from SEED on
# the backends of GPUJIT_SPEC_BACKENDS against LuaJIT's interpreter; each
# failure is shrunk and written under build/fuzz/.
N    ?= 1000
SEED ?= $(shell date +%s)
fuzz: deps
	$(MAKE) all
	$(LUA_ENV) GPUJIT_SPEC_BACKENDS=$(GPUJIT_SPEC_BACKENDS) $(LUAJIT) spec/fuzz/main.lua $(N) $(SEED)

# libFuzzer on the bytecode frontend and typer (spec/fuzz/frontend_fuzz.c):
# the core built with clang-15 under ASan and UBSan, run FUZZ_TIME seconds.
# Needs clang-15 (installed here when missing; not part of `make test`).
FUZZ_TIME ?= 180
FF        = $(BUILD)/fuzz-frontend
FF_FLAGS  = -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined
FF_OBJS   = $(patsubst %.c,$(FF)/obj/%.o,$(SRCS))
$(FF)/obj/%.o: %.c $(wildcard src/*.h) $(wildcard backends/*.h)
	@mkdir -p $(dir $@)
	clang-15 $(filter-out -O2,$(CFLAGS)) $(FF_FLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<
$(FF)/gpujit/core.so: $(FF_OBJS)
	@mkdir -p $(dir $@)
	clang-15 -shared $(FF_FLAGS) -o $@ $^ $(LLVM_LDFLAGS) $(LLVM_LIBS) -lpthread -ldl -lm
$(FF)/frontend_fuzz: spec/fuzz/frontend_fuzz.c $(FF)/gpujit/core.so
	clang-15 -std=c11 -Wall -Wextra -Werror -I$(LUA_INC) $(FF_FLAGS) -fsanitize=fuzzer -o $@ $< \
	  -lluajit-5.1 -lpthread -ldl -lm
fuzz-frontend: deps
	@dpkg-query -W -f='$${Status}' clang-15 2>/dev/null | grep -q "ok installed" || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-15)
	$(MAKE) $(FF)/frontend_fuzz
	@mkdir -p $(FF)/corpus
	ASAN_OPTIONS=detect_leaks=0 LUA_CPATH="$(FF)/?.so" $(FF)/frontend_fuzz -max_total_time=$(FUZZ_TIME) \
	  -print_final_stats=1 -artifact_prefix=$(FF)/ $(FF)/corpus

clean:
	rm -rf $(BUILD)
