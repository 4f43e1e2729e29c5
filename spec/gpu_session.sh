#!/bin/sh
# One command for a session on a machine with an NVIDIA GPU (issue 5).
#
#   sh spec/gpu_session.sh prepare    here, on the build machine (Debian
#                                     bookworm, network): builds, the CUDA C
#                                     reference too, and downloads into
#                                     .gpudeps/ the Debian packages that the
#                                     GPU machine lacks (LuaJIT, LLVM 15's
#                                     library, busted and its modules)
#   sh spec/gpu_session.sh            there (make gpu-session): unpacks them
#                                     under /opt/gjdeps (not over /), runs
#                                     the whole suite on cuda, the CUDA
#                                     benchmarks, and writes the report
#
# The GPU machine gets the working tree with `build` and `.gpudeps` carried
# (the device tool's run: carry ["build", ".gpudeps"]); it needs neither a
# network nor LLVM's headers: core.so is the one built here.  What to paste
# into bench/RESULTS.md, the suite's summary and failures, and the device
# are in $OUT/session.md ($OUT defaults to ./out); the full logs beside it.
# To check the script on the build machine: GJ_FORCE_DEPS=1 (use the
# carried packages even where luajit is installed), GJ_DEPS_ROOT (where to
# unpack them), GJ_SESSION_BACKENDS (instead of cuda).
# Budget: one run call is at most 600 s; the suite and the benchmark run
# under timeouts that leave room (GJ_SUITE_TIMEOUT, GJ_BENCH_TIMEOUT).
set -u
cd "$(dirname "$0")/.." || exit 1
DEPS=.gpudeps
# Packages whose files the session needs, and libraries LLVM 15 needs that
# a non-Debian image may lack (unpacked apart, used only where missing).
PKGS="luajit libluajit-5.1-2 libluajit-5.1-common libllvm15 libz3-4 lua-busted lua-cliargs lua-dkjson lua-filesystem
      lua-luassert lua-mediator lua-penlight lua-say lua-system lua-term"
FALLBACK_PKGS="libxml2 libicu72 libffi8 libedit2 libtinfo6 libbsd0 libmd0"

if [ "${1:-}" = prepare ]; then
  make all || exit 1
  make build/bench/cuda_ref.cubin build/bench/cuda_ref.ptx || echo "no nvcc here: the GPU machine builds the reference"
  rm -rf "$DEPS" && mkdir -p "$DEPS/fallback" || exit 1
  (cd "$DEPS" && apt-get download $PKGS) || exit 1
  (cd "$DEPS/fallback" && apt-get download $FALLBACK_PKGS) || exit 1
  # LLVM's C headers, for the specs that build a C plugin (the GPU machine
  # has no llvm-config-15: the session gives them a stand-in)
  mkdir -p "$DEPS/include/llvm" && cp -rL /usr/lib/llvm-15/include/llvm-c "$DEPS/include/" &&
    cp -rL /usr/lib/llvm-15/include/llvm/Config "$DEPS/include/llvm/" || exit 1
  du -sh "$DEPS" build
  echo "now, with the device tool: run command 'sh spec/gpu_session.sh' carry [\"build\", \"$DEPS\"]"
  exit 0
fi

OUT=${OUT:-./out}
mkdir -p "$OUT"
REPORT=$OUT/session.md
t0=$(date +%s)
note() { echo "$*" | tee -a "$REPORT"; }
: >"$REPORT"

# -- Tools: the machine's own, else the carried packages -------------------
ROOT=${GJ_DEPS_ROOT:-/opt/gjdeps}
if [ -n "${GJ_FORCE_DEPS:-}" ] || ! command -v luajit >/dev/null 2>&1 || [ ! -f /usr/bin/busted ]; then
  [ -d "$DEPS" ] || { note "no luajit/busted here and no $DEPS: run 'sh spec/gpu_session.sh prepare' first"; exit 1; }
  mkdir -p "$ROOT" "$ROOT-fallback"
  for f in "$DEPS"/*.deb; do dpkg -x "$f" "$ROOT"; done
  LIBS=$ROOT/usr/lib/x86_64-linux-gnu:$ROOT/usr/lib/llvm-15/lib
  # a library LLVM needs that the system lacks comes from bookworm's package
  for f in "$DEPS"/fallback/*.deb; do dpkg -x "$f" "$ROOT-fallback"; done
  for so in libxml2.so.2 libicuuc.so.72 libffi.so.8 libedit.so.2 libtinfo.so.6 libbsd.so.0 libmd.so.0; do
    if ! ldconfig -p | grep -q "$so"; then
      mkdir -p "$ROOT/lib-missing"
      for lib in "$ROOT-fallback"/usr/lib/x86_64-linux-gnu/"$so"* "$ROOT-fallback"/lib/x86_64-linux-gnu/"$so"*; do
        [ -e "$lib" ] && cp -a "$lib" "$ROOT/lib-missing/"
      done
    fi
  done
  # libicu's data library goes with libicuuc
  cp -a "$ROOT-fallback"/usr/lib/x86_64-linux-gnu/libicudata.so.72* "$ROOT/lib-missing/" 2>/dev/null
  export LD_LIBRARY_PATH=$LIBS:$ROOT/lib-missing${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=$ROOT/usr/bin:$PATH
  export BUSTED=$ROOT/usr/bin/busted
  SHARE="$ROOT/usr/share/lua/5.1/?.lua;$ROOT/usr/share/lua/5.1/?/init.lua;$ROOT/usr/share/luajit-2.1.0-beta3/?.lua"
  # llvm-config-15 for the specs that build C plugins: the carried headers;
  # the plugin needs no link of its own (the core has LLVM loaded)
  if ! command -v llvm-config-15 >/dev/null 2>&1; then
    mkdir -p "$ROOT/shim"
    printf '#!/bin/sh\ncase "$1" in --cflags) echo "-I%s";; *) echo "";; esac\n' "$PWD/$DEPS/include" \
      >"$ROOT/shim/llvm-config-15"
    chmod +x "$ROOT/shim/llvm-config-15"
    ln -sf "$ROOT/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1" "$ROOT/shim/libLLVM-15.so"
    export PATH=$ROOT/shim:$PATH LIBRARY_PATH=$ROOT/shim${LIBRARY_PATH:+:$LIBRARY_PATH}
  fi
  CLIB="$ROOT/usr/lib/x86_64-linux-gnu/lua/5.1/?.so"
else
  SHARE="" CLIB=""
fi
export LUA_PATH="lua/?.lua;lua/?/init.lua;${SHARE:+$SHARE;};"
export LUA_CPATH="build/?.so;${CLIB:+$CLIB;};"
export PATH=$PATH:/usr/local/cuda/bin
[ -f build/gpujit/core.so ] || make all || { note "no build/gpujit/core.so and no way to build it"; exit 1; }

note "## GPU session $(date -u +%Y-%m-%dT%H:%MZ), gpujit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
note ""
note '```'
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv 2>&1 | tee -a "$REPORT"
luajit -e "for _, b in ipairs(require('gpujit').backends()) do print(b.name, b.available, b.error or '') end" \
  2>&1 | tee -a "$REPORT"
note '```'

# -- The suite on cuda ------------------------------------------------------
note ""
note "### The suite on ${GJ_SESSION_BACKENDS:-cuda} (GPUJIT_SPEC_BACKENDS)"
# (the suite-wide PTX check re-runs the suite on cpu: make test does it)
GJ_SKIP_PTX_CHECK=1 GPUJIT_SPEC_BACKENDS=${GJ_SESSION_BACKENDS:-cuda} timeout "${GJ_SUITE_TIMEOUT:-330}" sh spec/run.sh -o utfTerminal \
  >"$OUT/suite.log" 2>&1
rc=$?
note '```'
tail -n 1 "$OUT/suite.log" | tee -a "$REPORT"
[ "$rc" -eq 124 ] && note "(stopped by the timeout after ${GJ_SUITE_TIMEOUT:-330} s)"
grep -E '^\[cuda PTX check' "$OUT/suite.log" | tee -a "$REPORT"
note '```'
# busted's failure and error sections, shortened
awk '/^(Failure|Error) →/ { on = 1; n = 0 } on && n < 12 { print; n++ } /^$/ { if (n > 2) on = 0 }' \
  "$OUT/suite.log" | head -n 300 >"$OUT/failures.txt"
if [ -s "$OUT/failures.txt" ]; then
  note "Failures and errors (first lines of each; all of them in suite.log):"
  note '```'
  head -n 120 "$OUT/failures.txt" | tee -a "$REPORT"
  note '```'
fi

# -- The benchmarks -----------------------------------------------------------
note ""
if command -v nvcc >/dev/null 2>&1; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
  make -B build/bench/cuda_ref.cubin build/bench/cuda_ref.ptx CUDA_REF_ARCH="sm_${cc:-90}" NVCC=nvcc \
    >"$OUT/bench.log" 2>&1 || note "(nvcc failed: see bench.log; using the carried reference)"
fi
timeout "${GJ_BENCH_TIMEOUT:-150}" luajit bench/cuda_vs_c.lua "${BENCH_RUNS:-7}" >>"$OUT/bench.log" 2>&1
note "$(sed -n '/^### cuda backend/,$p' "$OUT/bench.log")"
grep -q '^### cuda backend' "$OUT/bench.log" || { note "benchmark did not report:"; note '```'; tail -n 20 "$OUT/bench.log" | tee -a "$REPORT"; note '```'; }

# -- Pinned staging: is it worth it for table / FFI-array copies? ----------
note ""
note "### Host-device copies: pageable vs pinned staging (bench/cuda_copies.lua)"
note '```'
timeout 90 luajit bench/cuda_copies.lua 2>&1 | tee -a "$REPORT"
note '```'
note ""
note "(session: $(($(date +%s) - t0)) s)"
exit 0
