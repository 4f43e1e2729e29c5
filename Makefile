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
# What `make bench` needs on top: clang-15 with OpenMP for the C
# references, gnuplot for the plot (bench/README.md).
BENCH_PKGS = clang-15 libomp-15-dev gnuplot-nox

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

.PHONY: all deps bench-deps bench test run lint clean

all: $(CORE)

$(CORE): $(OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(OBJS) $(LDLIBS)

$(BUILD)/obj/%.o: %.c $(wildcard src/*.h) $(wildcard backends/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

# Install the Debian packages that are missing; a no-op when all are there.
deps bench-deps:
	@missing=""; for p in $(if $(filter bench-deps,$@),$(BENCH_PKGS),$(DEPS_PKGS)); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make $@: installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else echo "make $@: all present"; fi

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

# gpujit's cpu backend vs C/OpenMP and plain LuaJIT, side by side
# (bench/README.md).  Writes bench/RESULTS.md's latest table and
# bench/results.png.  BENCH_RUNS: samples per measurement (median).
BENCH_RUNS   ?= 11
BENCH_CC     ?= clang-15
BENCH_CFLAGS ?= -O3 -march=native -fopenmp -ffp-contract=off
BENCH_REF     = $(BUILD)/bench/libgjref.so

$(BENCH_REF): bench/ref.c
	@mkdir -p $(dir $@)
	$(BENCH_CC) $(BENCH_CFLAGS) -shared -fPIC -o $@ $<

bench: deps bench-deps
	$(MAKE) all $(BENCH_REF)
	$(LUA_ENV) GJ_BENCH_REF=$(BENCH_REF) GJ_BENCH_CFLAGS="$(BENCH_CC) $(BENCH_CFLAGS)" \
	  GJ_BENCH_DAT=$(BUILD)/bench/results.dat $(LUAJIT) bench/bench.lua $(BENCH_RUNS)
	gnuplot -e "dat='$(BUILD)/bench/results.dat'; out='bench/results.png'" bench/plot.gp

lint:
	luacheck lua spec examples bench

clean:
	rm -rf $(BUILD)
