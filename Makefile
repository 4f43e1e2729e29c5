# gpujit — build, test and run.  `make test` is what CI runs: it installs
# what is missing (Debian packages), builds, and runs the busted suite.

LLVM_CONFIG ?= llvm-config-15
LUAJIT      ?= luajit
LUA_INC     ?= /usr/include/luajit-2.1
BUILD       ?= build
CC          ?= cc

# Where `make install` puts things (LuaRocks passes its own LUADIR, LIBDIR,
# PREFIX: rockspec/gpujit-scm-1.rockspec).  DESTDIR stages an install.
PREFIX      ?= /usr/local
LUA_VERSION ?= 5.1
LUADIR      ?= $(PREFIX)/share/lua/$(LUA_VERSION)
LIBDIR      ?= $(PREFIX)/lib/lua/$(LUA_VERSION)
EMBED_LIBDIR ?= $(PREFIX)/lib
BINDIR      ?= $(PREFIX)/bin
INCDIR      ?= $(PREFIX)/include/gpujit

# Debian packages the project needs, each checked before installing.
# love, xvfb, xauth and Mesa (llvmpipe) run the LÖVE example headless.
# Open MPI runs the MPI specs (make test-mpi; gpujit.mpi needs no headers,
# libopenmpi-dev is for building MPI programs beside it).
DEPS_PKGS = luajit libluajit-5.1-dev llvm-15-dev binutils lua-busted lua-check \
            pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo \
            luarocks cppcheck zlib1g pkg-config valgrind \
            llvm-spirv-15 spirv-tools \
            love xvfb xauth libgl1-mesa-dri \
            openmpi-bin libopenmpi-dev
# What `make bench` needs on top: clang-15 with OpenMP for the C
# references, gnuplot for the plot (bench/README.md).
BENCH_PKGS = clang-15 libomp-15-dev gnuplot-nox
# What `make bench-peers` needs: Debian's python3 with venv (the peers
# themselves come from PyPI into build/peers-venv).
PEERS_PKGS = python3 python3-venv

LLVM_CFLAGS  = $(shell $(LLVM_CONFIG) --cflags 2>/dev/null)
LLVM_LDFLAGS = $(shell $(LLVM_CONFIG) --ldflags 2>/dev/null)
LLVM_LIBS    = $(shell $(LLVM_CONFIG) --libs 2>/dev/null)
LUAJIT_LIBS  = $(shell pkg-config --libs luajit 2>/dev/null || echo -lluajit-5.1)

# CFLAGS/LDFLAGS are the user's (LuaRocks passes CFLAGS); the project's own
# flags are kept apart so that a CFLAGS on the command line cannot drop them.
CFLAGS  ?= -O2 -g
# SAN: sanitizer flags for the core and the C tests (make tsan, make check)
SAN       ?=
GJ_CFLAGS  = -std=c11 -fPIC -fvisibility=hidden -Wall -Wextra -Werror \
             -I$(LUA_INC) -Isrc $(LLVM_CFLAGS) $(SAN)
GJ_LDFLAGS = -shared $(LLVM_LDFLAGS) $(SAN)
GJ_LDLIBS  = $(LLVM_LIBS) -lpthread -ldl -lm

SRCS = $(wildcard src/*.c) $(wildcard targets/*.c) $(wildcard runtimes/*.c)
HDRS = $(wildcard src/*.h) $(wildcard targets/*.h) $(wildcard runtimes/*.h)
# gj_build_id: a hash of the sources and flags, part of every cache key, so
# that a rebuilt core never loads what another build compiled.
BUILD_ID_C = $(BUILD)/gen/gj_buildid.c
OBJS = $(patsubst %.c,$(BUILD)/obj/%.o,$(SRCS)) $(BUILD)/obj/gen/gj_buildid.o
CORE = $(BUILD)/gpujit/core.so
# The same objects as a library for C hosts (luaopen_gpujit, src/gpujit.h).
EMBED_LIB = $(BUILD)/libgpujit.so
EMBED_HOST = $(BUILD)/examples/embed-host
# The shipped plugins, next to the core (rules below).
PLUGIN_SOS = $(BUILD)/gpujit/plugins/count.so $(BUILD)/gpujit/plugins/nancheck.so
LUA_SRCS = $(wildcard lua/gpujit/*.lua)
EMBED_HEADERS = src/gpujit.h src/gj_type.h src/gj_job.h src/gpujit_plugin.h

LUA_ENV = LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="$(BUILD)/?.so;;"

# The gallery (examples/*.lua), each checking its own result; `make examples`
# runs them on EXAMPLE_BACKEND (empty: the default backend).
EXAMPLES = mandelbrot blur nbody nbody_vec3 reduce matmul particles boids inspect bgcompile ad_fit
EXAMPLE_BACKEND ?=
MULTISTATE = $(BUILD)/multistate

.PHONY: all deps bench-deps peers-deps bench-peers bench bench-cuda gpu-session test test-mpi run lint examples love-example install \
        install-embed uninstall \
        install-check clean tsan check fuzz fuzz-frontend

all: $(CORE) $(EMBED_LIB) $(PLUGIN_SOS)

$(CORE): $(OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(GJ_LDFLAGS) $(LDFLAGS) -o $@ $(OBJS) $(GJ_LDLIBS) $(LDLIBS)

# The shipped plugins (docs/plugins.md): one shared object each, loaded by
# gpu.load_plugin, linking LLVM itself; plugins/plugin_ir.c is in both.
$(BUILD)/gpujit/plugins/count.so: plugins/count/count.c
$(BUILD)/gpujit/plugins/nancheck.so: plugins/nancheck/nancheck.c
$(PLUGIN_SOS): plugins/plugin_ir.c plugins/plugin_ir.h src/gpujit_plugin.h src/gj_job.h
	@mkdir -p $(dir $@)
	$(CC) $(GJ_CFLAGS) $(CFLAGS) $(GJ_LDFLAGS) $(LDFLAGS) -o $@ $(filter %.c,$^) $(GJ_LDLIBS) $(LDLIBS)

# Several lua_States on their own threads at once (spec/c/multistate.c).
$(MULTISTATE): spec/c/multistate.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -I$(LUA_INC) $(SAN) \
	  -o $@ $< -lluajit-5.1 -lpthread

$(EMBED_LIB): $(OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(GJ_LDFLAGS) -Wl,-soname,libgpujit.so $(LDFLAGS) -o $@ $(OBJS) $(GJ_LDLIBS) $(LDLIBS)

$(EMBED_HOST): examples/embed/host.c $(EMBED_HEADERS) $(EMBED_LIB)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror $(CFLAGS) -I$(LUA_INC) -Isrc -o $@ $< \
	  -L$(BUILD) -lgpujit -Wl,-rpath,'$$ORIGIN/..' $(LUAJIT_LIBS) -lm $(LDFLAGS)

$(BUILD)/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(GJ_CFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD_ID_C): $(SRCS) $(HDRS) Makefile
	@mkdir -p $(dir $@)
	@id=$$({ cat $(sort $(SRCS) $(HDRS)); echo '$(CC) $(GJ_CFLAGS) $(CFLAGS)'; } | sha256sum | cut -c1-64); \
	printf 'const char gj_build_id[] = "%s";\n' "$$id" > $@

$(BUILD)/obj/gen/gj_buildid.o: $(BUILD_ID_C)
	@mkdir -p $(dir $@)
	$(CC) $(GJ_CFLAGS) $(CFLAGS) -c -o $@ $<

# Install the Debian packages that are missing; a no-op when all are there.
deps bench-deps peers-deps:
	@missing=""; for p in $(if $(filter bench-deps,$@),$(BENCH_PKGS),$(if $(filter peers-deps,$@),$(PEERS_PKGS),$(DEPS_PKGS))); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make $@: installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else echo "make $@: all present"; fi

# The suite runs every spec on both compiling backends (spec/helpers.lua);
# PoCL provides the OpenCL device on machines without a GPU.  The
# environment's GPUJIT_SPEC_BACKENDS, when set, wins.  spec/parts.sh runs
# it as parts, a spec file each, GPUJIT_TEST_JOBS at a time (default: the
# cores): the main run, the SPIR-V run and the PTX run side by side.
# `sh spec/run.sh [files]` runs specs in one busted process, as before.
GPUJIT_SPEC_BACKENDS ?= cpu,opencl

test: deps
	$(MAKE) all $(MULTISTATE)
	$(LUA_ENV) GPUJIT_SPEC_BACKENDS=$(GPUJIT_SPEC_BACKENDS) bash spec/parts.sh
	$(LUA_ENV) $(MULTISTATE) 4 3 $(GPUJIT_SPEC_BACKENDS)
	$(LUA_ENV) GPUJIT_OPENCL_FORMAT=spirv $(MULTISTATE) 4 2 opencl
	$(MAKE) test-mpi
	$(MAKE) examples
	$(MAKE) examples EXAMPLE_BACKEND=opencl
	$(MAKE) love-example
	$(MAKE) install-check

# gpujit.mpi under mpirun (spec/mpi/mpi_spec.lua; docs/distributed.md):
# jobs of 1, 2 and 3 ranks on this machine, each rank script checking
# itself; pending, with the reason, where MPI is not installed.
test-mpi: all
	$(LUA_ENV) GPUJIT_SPEC_BACKENDS=$(GPUJIT_SPEC_BACKENDS) sh spec/run.sh spec/mpi/mpi_spec.lua

# The multi-state test under ThreadSanitizer: core and test built with
# -fsanitize=thread in build/tsan.  LLVM, LuaJIT and PoCL are not
# instrumented; spec/c/tsan.supp says what of theirs is suppressed and why.
# -Wno-tsan: GCC refuses __atomic_thread_fence under TSan (cuda_run.c's
# fence before the host reads a mapped record; cuda does not run here).
TSAN_BUILD = build/tsan
tsan: deps
	$(MAKE) BUILD=$(TSAN_BUILD) SAN="-fsanitize=thread -Wno-tsan" all $(TSAN_BUILD)/multistate
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

# Every gallery example, then the embedding host: three lua_States for 100
# frames, a script error injected in one (docs/embedding.md).
examples: all $(EMBED_HOST)
	@mkdir -p $(BUILD)/examples
	@for e in $(EXAMPLES); do \
	  echo "== examples/$$e.lua $(EXAMPLE_BACKEND)"; \
	  $(LUA_ENV) GPUJIT_EXAMPLE_OUT=$(BUILD)/examples $(LUAJIT) examples/$$e.lua $(EXAMPLE_BACKEND) || exit 1; \
	done
	@echo "== $(EMBED_HOST)"
	$(EMBED_HOST) examples/embed/particles.lua lua $(EXAMPLE_BACKEND)

# The LÖVE example (examples/love/) headless under Xvfb (Mesa's llvmpipe):
# the bundle of its kernels is made first, then LOVE_FRAMES frames run and
# check themselves; the screenshot lands in $(BUILD)/love/love.png and the
# game's save directory under $(BUILD)/love/data, not in $HOME.
LOVE_FRAMES ?= 120
love-example: all
	$(LUA_ENV) $(LUAJIT) examples/love/make_bundle.lua examples/love/kernels.gjb
	@mkdir -p $(BUILD)/love
	XDG_DATA_HOME=$(CURDIR)/$(BUILD)/love/data xvfb-run -a -s "-screen 0 1280x720x24" \
	  love examples/love --frames $(LOVE_FRAMES) --screenshot $(CURDIR)/$(BUILD)/love/love.png

# The Lua module where LuaJIT looks by default (or where LuaRocks says).
install: $(CORE) $(PLUGIN_SOS)
	install -d $(DESTDIR)$(LUADIR)/gpujit $(DESTDIR)$(LIBDIR)/gpujit/plugins
	install -m 644 $(LUA_SRCS) $(DESTDIR)$(LUADIR)/gpujit/
	install -m 755 $(CORE) $(DESTDIR)$(LIBDIR)/gpujit/core.so
	install -m 755 $(PLUGIN_SOS) $(DESTDIR)$(LIBDIR)/gpujit/plugins/
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 bin/gpujit-precompile $(DESTDIR)$(BINDIR)/

# For C hosts: libgpujit.so and the embedding API's headers.
install-embed: $(EMBED_LIB)
	install -d $(DESTDIR)$(EMBED_LIBDIR) $(DESTDIR)$(INCDIR)
	install -m 755 $(EMBED_LIB) $(DESTDIR)$(EMBED_LIBDIR)/libgpujit.so
	install -m 644 $(EMBED_HEADERS) $(DESTDIR)$(INCDIR)/

uninstall:
	rm -f $(patsubst lua/gpujit/%,$(DESTDIR)$(LUADIR)/gpujit/%,$(LUA_SRCS))
	rm -f $(DESTDIR)$(LIBDIR)/gpujit/core.so $(DESTDIR)$(EMBED_LIBDIR)/libgpujit.so
	rm -f $(patsubst $(BUILD)/gpujit/%,$(DESTDIR)$(LIBDIR)/gpujit/%,$(PLUGIN_SOS))
	rm -f $(DESTDIR)$(BINDIR)/gpujit-precompile
	rm -f $(patsubst src/%,$(DESTDIR)$(INCDIR)/%,$(EMBED_HEADERS))
	-rmdir $(DESTDIR)$(LUADIR)/gpujit $(DESTDIR)$(LIBDIR)/gpujit/plugins $(DESTDIR)$(LIBDIR)/gpujit \
	  $(DESTDIR)$(INCDIR) 2>/dev/null

# `make install` into a staging DESTDIR and `luarocks make` into a private
# tree, each then loaded from /tmp with LuaJIT's paths pointing there only.
install-check: all
	sh spec/install_check.sh $(BUILD)

lint:
	luacheck lua spec examples bench
	cppcheck $(CPPCHECK_FLAGS) src targets runtimes plugins examples/embed

# cppcheck: the checks and suppressions (each with its reason) are in
# .cppcheck-suppressions; system headers are not analysed.
CPPCHECK_FLAGS = --enable=warning,style,performance,portability --std=c11 -q \
  --error-exitcode=1 --inline-suppr -Isrc \
  --suppressions-list=.cppcheck-suppressions

# gpujit's cpu backend vs C/OpenMP and plain LuaJIT, side by side
# (bench/README.md).  Writes bench/RESULTS.md's latest table and
# bench/results.png.  BENCH_RUNS: samples per measurement (median).
BENCH_RUNS   ?= 11
# bench/autodiff.lua (derivatives vs kernels): work items (its softmax row's
# tape is about 5.5 KB each) and rounds
BENCH_AD_N    ?= 262144
BENCH_AD_RUNS ?= 15
BENCH_GCC    ?= gcc
BENCH_CLANG  ?= clang-15
BENCH_CFLAGS ?= -O3 -march=native -fopenmp -ffp-contract=off
BENCH_REF_GCC   = $(BUILD)/bench/libgjref-gcc.so
BENCH_REF_CLANG = $(BUILD)/bench/libgjref-clang.so
BENCH_SIMD_GCC   = $(BUILD)/bench/libgjsimd-gcc.so
BENCH_SIMD_CLANG = $(BUILD)/bench/libgjsimd-clang.so

# The C references, built by both compilers: neither is always the faster.
$(BENCH_REF_GCC): bench/ref.c
	@mkdir -p $(dir $@)
	$(BENCH_GCC) $(BENCH_CFLAGS) -shared -fPIC -o $@ $<
$(BENCH_REF_CLANG): bench/ref.c
	@mkdir -p $(dir $@)
	$(BENCH_CLANG) $(BENCH_CFLAGS) -shared -fPIC -o $@ $<
# The hand-vectorized references (AVX2 and AVX-512 intrinsics, chosen at
# run time; bench/ref_simd.c), by both compilers too.  -ffp-contract=off
# even where BENCH_CFLAGS lacks it: their results must be ref.c's bit for bit.
$(BENCH_SIMD_GCC): bench/ref_simd.c bench/ref_simd_body.h
	@mkdir -p $(dir $@)
	$(BENCH_GCC) $(BENCH_CFLAGS) -ffp-contract=off -std=c11 -shared -fPIC -o $@ $< -lm
$(BENCH_SIMD_CLANG): bench/ref_simd.c bench/ref_simd_body.h
	@mkdir -p $(dir $@)
	$(BENCH_CLANG) $(BENCH_CFLAGS) -ffp-contract=off -std=c11 -shared -fPIC -o $@ $< -lm

bench: deps bench-deps
	$(MAKE) all $(BENCH_REF_GCC) $(BENCH_REF_CLANG) $(BENCH_SIMD_GCC) $(BENCH_SIMD_CLANG)
	$(LUA_ENV) GJ_BENCH_REF_GCC=$(BENCH_REF_GCC) GJ_BENCH_REF_CLANG=$(BENCH_REF_CLANG) \
	  GJ_BENCH_SIMD_GCC=$(BENCH_SIMD_GCC) GJ_BENCH_SIMD_CLANG=$(BENCH_SIMD_CLANG) \
	  GJ_BENCH_CFLAGS="$(BENCH_CFLAGS)" \
	  GJ_BENCH_DAT=$(BUILD)/bench/results.dat $(LUAJIT) bench/bench.lua $(BENCH_RUNS)
	gnuplot -e "dat='$(BUILD)/bench/results.dat'; out='bench/results.png'" bench/plot.gp
	$(LUA_ENV) $(LUAJIT) bench/autodiff.lua cpu $(BENCH_AD_N) $(BENCH_AD_RUNS)

# gpujit's cpu backend vs Numba, Taichi and Warp on the CPU (bench/peers.py,
# bench/README.md), and gpu.grad vs JAX and Warp (bench/peers_ad.py): the peers are installed from PyPI into a private venv,
# each on its own (one that fails is reported in the table, with pip's last
# line in $(PEERS_VENV)/pip-NAME.log); `rm -rf $(PEERS_VENV)` to install
# again.  Writes the "Peers" table into bench/RESULTS.md and README.md.
# Not part of `make test`: it takes minutes.
PEERS_VENV   ?= $(BUILD)/peers-venv
PEERS_PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
PEERS_PIP     = numpy numba taichi warp-lang jax[cpu]
# bench/peers_ad.py (the autodiff rows: gpu.grad, jax.grad, wp.Tape): work items
PEERS_AD_N   ?= 262144
PEERS_THREADS ?= 2

$(PEERS_VENV)/.installed:
	$(PEERS_PYTHON) -m venv $(PEERS_VENV)
	@for p in $(foreach p,$(PEERS_PIP),'$(p)'); do \
	  echo "bench-peers: pip install $$p"; \
	  $(PEERS_VENV)/bin/pip install -q --disable-pip-version-check "$$p" > "$(PEERS_VENV)/pip-$$p.log" 2>&1 || \
	    echo "bench-peers: $$p did not install: $$(tail -n 1 "$(PEERS_VENV)/pip-$$p.log")"; \
	done
	@touch $@

bench-peers: deps peers-deps
	$(MAKE) all $(PEERS_VENV)/.installed
	$(LUA_ENV) LUAJIT=$(LUAJIT) PEERS_THREADS=$(PEERS_THREADS) PEERS_VENV=$(PEERS_VENV) \
	  $(PEERS_VENV)/bin/python bench/peers.py $(BENCH_RUNS)
	$(LUA_ENV) LUAJIT=$(LUAJIT) PEERS_THREADS=$(PEERS_THREADS) PEERS_VENV=$(PEERS_VENV) PEERS_AD_N=$(PEERS_AD_N) \
	  $(PEERS_VENV)/bin/python bench/peers_ad.py $(BENCH_RUNS)

# The cuda backend vs CUDA C (bench/cuda_vs_c.lua; bench/README.md).  The
# reference kernels are built with nvcc where the toolkit is (a cubin for
# CUDA_REF_ARCH and PTX for any newer GPU); without a driver or a device
# the benchmark says why and exits 0.
NVCC          ?= $(firstword $(wildcard $(CUDA_HOME)/bin/nvcc /usr/local/cuda/bin/nvcc) \
                   $(shell command -v nvcc 2>/dev/null))
CUDA_REF_ARCH ?= sm_90
CUDA_REF       = $(BUILD)/bench/cuda_ref.cubin $(BUILD)/bench/cuda_ref.ptx

$(BUILD)/bench/cuda_ref.cubin: bench/cuda_ref.cu
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -fmad=false -arch=$(CUDA_REF_ARCH) -cubin -o $@ $<

$(BUILD)/bench/cuda_ref.ptx: bench/cuda_ref.cu
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -fmad=false -arch=compute_80 -ptx -o $@ $<

bench-cuda: all
	@if [ -n "$(NVCC)" ]; then $(MAKE) $(CUDA_REF); \
	 else echo "bench-cuda: no nvcc: using what $(BUILD)/bench holds"; fi
	$(LUA_ENV) $(LUAJIT) bench/cuda_vs_c.lua $(BENCH_RUNS)

# One command for a session on a machine with an NVIDIA GPU: the suite on
# cuda, the benchmarks, and the report to paste under $(OUT) (default ./out).
gpu-session:
	sh spec/gpu_session.sh

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
FF_OBJS   = $(patsubst %.c,$(FF)/obj/%.o,$(SRCS)) $(FF)/obj/gen/gj_buildid.o
$(FF)/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	clang-15 $(GJ_CFLAGS) $(filter-out -O2,$(CFLAGS)) $(FF_FLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<
$(FF)/obj/gen/gj_buildid.o: $(BUILD_ID_C)
	@mkdir -p $(dir $@)
	clang-15 $(GJ_CFLAGS) $(FF_FLAGS) -c -o $@ $<
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
