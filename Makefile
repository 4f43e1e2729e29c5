# gpujit — build, test and run.  `make test` is what CI runs: it installs
# what is missing (Debian packages), builds, and runs the busted suite.

LLVM_CONFIG ?= llvm-config-15
LUAJIT      ?= luajit
LUA_INC     ?= /usr/include/luajit-2.1
BUILD       ?= build
CC          ?= cc

# Debian packages the project needs, each checked before installing.
DEPS_PKGS = luajit libluajit-5.1-dev llvm-15-dev lua-busted lua-check \
            pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo valgrind

LLVM_CFLAGS  = $(shell $(LLVM_CONFIG) --cflags 2>/dev/null)
LLVM_LDFLAGS = $(shell $(LLVM_CONFIG) --ldflags 2>/dev/null)
LLVM_LIBS    = $(shell $(LLVM_CONFIG) --libs 2>/dev/null)

CFLAGS  ?= -O2 -g
# SAN: sanitizer flags for the core and the C tests (make tsan, make check)
SAN     ?=
CFLAGS  += -std=c11 -fPIC -fvisibility=hidden -Wall -Wextra -Werror \
           -I$(LUA_INC) -Isrc -Ibackends $(LLVM_CFLAGS) $(SAN)
LDFLAGS += -shared $(LLVM_LDFLAGS) $(SAN)
LDLIBS  += $(LLVM_LIBS) -lpthread -ldl -lm

SRCS = $(wildcard src/*.c) $(wildcard backends/*.c)
OBJS = $(patsubst %.c,$(BUILD)/obj/%.o,$(SRCS))
CORE = $(BUILD)/gpujit/core.so

LUA_ENV = LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="$(BUILD)/?.so;;"

MULTISTATE = $(BUILD)/multistate

.PHONY: all deps test run lint clean tsan check

all: $(CORE)

$(CORE): $(OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(OBJS) $(LDLIBS)

# Several lua_States on their own threads at once (spec/c/multistate.c).
$(MULTISTATE): spec/c/multistate.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -I$(LUA_INC) $(SAN) \
	  -o $@ $< -lluajit-5.1 -lpthread

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
	$(MAKE) all $(MULTISTATE)
	$(LUA_ENV) GPUJIT_SPEC_BACKENDS=$(GPUJIT_SPEC_BACKENDS) sh spec/run.sh
	$(LUA_ENV) $(MULTISTATE) 4 3 $(GPUJIT_SPEC_BACKENDS)

# The multi-state test under ThreadSanitizer: core and test built with
# -fsanitize=thread in build/tsan.  LLVM, LuaJIT and PoCL are not
# instrumented; spec/c/tsan.supp says what of theirs is suppressed and why.
TSAN_BUILD = build/tsan
tsan: deps
	$(MAKE) BUILD=$(TSAN_BUILD) SAN="-fsanitize=thread" all $(TSAN_BUILD)/multistate
	LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="$(TSAN_BUILD)/?.so;;" \
	  TSAN_OPTIONS="suppressions=$(CURDIR)/spec/c/tsan.supp halt_on_error=1 exitcode=66 second_deadlock_stack=1" \
	  $(TSAN_BUILD)/multistate 4 2 $(GPUJIT_SPEC_BACKENDS)

# make check: the busted suite with the core under AddressSanitizer and
# UndefinedBehaviorSanitizer (build/asan; spec/asan.sh: luajit runs with
# libasan preloaded, any UB aborts, reports of every process are checked),
# then the C core under valgrind (spec/valgrind.sh, a subset of the specs).
ASAN_BUILD = build/asan
check: deps
	$(MAKE) BUILD=$(ASAN_BUILD) \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" all
	$(LUA_ENV) ASAN_BUILD=$(ASAN_BUILD) GPUJIT_SPEC_BACKENDS=$(GPUJIT_SPEC_BACKENDS) sh spec/asan.sh
	$(MAKE) all
	$(LUA_ENV) sh spec/valgrind.sh

run: deps
	$(MAKE) all
	$(LUA_ENV) $(LUAJIT) examples/saxpy.lua

lint:
	luacheck lua spec examples

clean:
	rm -rf $(BUILD)
