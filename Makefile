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
HDRS = $(wildcard src/*.h) $(wildcard backends/*.h)
# gj_build_id: a hash of the sources and flags, part of every cache key, so
# that a rebuilt core never loads what another build compiled.
BUILD_ID_C = $(BUILD)/gen/gj_buildid.c
OBJS = $(patsubst %.c,$(BUILD)/obj/%.o,$(SRCS)) $(BUILD)/obj/gen/gj_buildid.o
CORE = $(BUILD)/gpujit/core.so

LUA_ENV = LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="$(BUILD)/?.so;;"

.PHONY: all deps test run lint clean

all: $(CORE)

$(CORE): $(OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(OBJS) $(LDLIBS)

$(BUILD)/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD_ID_C): $(SRCS) $(HDRS) Makefile
	@mkdir -p $(dir $@)
	@id=$$({ cat $(sort $(SRCS) $(HDRS)); echo '$(CC) $(CFLAGS)'; } | sha256sum | cut -c1-64); \
	printf 'const char gj_build_id[] = "%s";\n' "$$id" > $@

$(BUILD)/obj/gen/gj_buildid.o: $(BUILD_ID_C)
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

clean:
	rm -rf $(BUILD)
