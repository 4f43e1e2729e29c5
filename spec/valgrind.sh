#!/bin/sh
# The C core under valgrind (memcheck), for `make check`.  Runs a subset of
# the specs, the ones that drive the core through its error paths and every
# kind of launch, on the cpu backend, with LuaJIT's JIT off (its machine
# code is not what we check); the full suite takes hours under valgrind.
# Reports whose top frames are in LuaJIT, LLVM or the C library's startup
# are suppressed (spec/c/valgrind.supp, with the reasons); anything else,
# in core.so or in a compiled kernel, fails the run.
#   LUA_PATH/LUA_CPATH as for the specs; VALGRIND_SPECS overrides the list.
specs=${VALGRIND_SPECS:-"spec/hostile_spec.lua spec/boundscheck_spec.lua spec/errors_spec.lua spec/api_examples_spec.lua"}
log=$(mktemp)
GPUJIT_SPEC_BACKENDS=cpu valgrind --tool=memcheck --error-exitcode=68 \
  --suppressions=spec/c/valgrind.supp --leak-check=no --num-callers=30 \
  --log-file="$log" luajit -joff /usr/bin/busted --ignore-lua $specs
rc=$?
grep -E "ERROR SUMMARY|Invalid|uninitialised|Mismatched" "$log" | sort | uniq -c | head -20
if [ $rc -ne 0 ]; then
  echo "valgrind: the run failed (status $rc); the log:"
  cat "$log"
fi
rm -f "$log"
exit $rc
