#!/bin/sh
# The busted suite (spec/parts.sh: its main, SPIR-V and PTX runs, or the
# runs named as arguments; GJ_PARTS_FILES for some specs) with the core
# built under AddressSanitizer and UndefinedBehaviorSanitizer (make check
# builds it into $ASAN_BUILD).
# luajit is not instrumented, so libasan is preloaded.  Every process that
# the suite starts (isolated specs, PoCL's linker) writes its reports to
# $ASAN_BUILD/reports/asan.PID; the run fails on a failed spec or on any
# report that the suppressions (spec/c/lsan.supp) do not cover.
ASAN_BUILD=${ASAN_BUILD:-build/asan}
dir="$ASAN_BUILD/reports"
rm -rf "$dir" && mkdir -p "$dir" || exit 1
libasan=$(${CC:-cc} -print-file-name=libasan.so)
# Only luajit (and what it starts) gets the preload, not run.sh's own tools:
# a `luajit` first in PATH that adds it.
real=$(command -v luajit) || exit 1
mkdir -p "$ASAN_BUILD/bin"
# Leak checking is for the busted process itself: LeakSanitizer's tracer
# crashes now and then ("Tracer caught signal 11") at the exit of the short
# child processes that specs start (H.run_isolated), which fails them for
# nothing gpujit did; they still run under ASan and UBSan.
printf '#!/bin/sh\ncase "$1" in */busted) ;; *) ASAN_OPTIONS="$ASAN_OPTIONS detect_leaks=0"; export ASAN_OPTIONS;; esac\nLD_PRELOAD="%s" exec "%s" "$@"\n' \
  "$libasan" "$real" > "$ASAN_BUILD/bin/luajit"
chmod +x "$ASAN_BUILD/bin/luajit"
# The fixed-seed fuzz run is make test's; under the sanitizers (a compiler
# several times slower) 64 of its kernels per backend are enough.
# The instrumented core, and nothing else: busted puts .busted's cpath
# before LUA_CPATH, so that a plain build's core was tested; GPUJIT_SPEC_CPATH
# replaces it (in this busted and in the suites that specs run again, e.g.
# cuda_spec's and opencl_spirv_spec's), and spec/helpers.lua fails every
# spec unless the core.so mapped into the process is GPUJIT_SPEC_CORE.
core="$PWD/$ASAN_BUILD/gpujit/core.so"
[ -f "$core" ] || { echo "asan: no $core (make check builds it)"; exit 1; }
GPUJIT_SPEC_CORE="$core" GPUJIT_SPEC_CPATH="$ASAN_BUILD/?.so" \
GPUJIT_FUZZ_SPEC_N=${GPUJIT_FUZZ_SPEC_N:-64} \
PATH="$PWD/$ASAN_BUILD/bin:$PATH" \
ASAN_OPTIONS="detect_leaks=1 allocator_may_return_null=1 log_path=$PWD/$dir/asan" \
LSAN_OPTIONS="suppressions=$PWD/spec/c/lsan.supp print_suppressions=0" \
UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 log_path=$PWD/$dir/ubsan" \
GJ_PARTS_DIR="$ASAN_BUILD/parts" \
LUA_CPATH="$ASAN_BUILD/?.so;;" bash spec/parts.sh "$@"
rc=$?
reports=$(grep -l -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$dir"/* 2>/dev/null)
if [ -n "$reports" ]; then
  for f in $reports; do echo "== $f"; cat "$f"; done
  echo "asan: sanitizer reports in $(echo $reports | wc -w) process(es)"
  rc=1
fi
[ $rc -eq 0 ] && echo "asan: no sanitizer reports"
exit $rc
