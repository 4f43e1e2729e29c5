#!/bin/sh
# The C core under valgrind (memcheck), for `make check`.  Runs a subset of
# the specs, the ones that drive the core through its error paths and every
# kind of launch, on the cpu backend, with LuaJIT's JIT off (its machine
# code is not what we check); the full suite takes hours under valgrind.
# Reports whose top frames are in LuaJIT, LLVM or the C library's startup
# are suppressed (spec/c/valgrind.supp, with the reasons); anything else,
# in core.so or in a compiled kernel, fails the run.
# Each spec file is a valgrind process of its own, GPUJIT_TEST_JOBS of them
# at once (default: the cores), as spec/parts.sh runs the suite.
#   LUA_PATH/LUA_CPATH as for the specs; VALGRIND_SPECS overrides the list.
specs=${VALGRIND_SPECS:-"spec/hostile_spec.lua spec/boundscheck_spec.lua spec/errors_spec.lua spec/api_examples_spec.lua"}
jobs=${GPUJIT_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
dir=$(mktemp -d)
# one spec under valgrind: its log in $dir, its status in $dir/NAME.rc
one() {
  name=$(basename "$1" .lua)
  GPUJIT_SPEC_BACKENDS=cpu valgrind --tool=memcheck --error-exitcode=68 \
    --suppressions=spec/c/valgrind.supp --leak-check=no --num-callers=30 \
    --log-file="$dir/$name.vg" luajit -joff /usr/bin/busted --ignore-lua "$1" > "$dir/$name.out" 2>&1
  echo $? > "$dir/$name.rc"
}
if [ "$1" = "--one" ]; then dir=$2; one "$3"; exit 0; fi
echo $specs | tr ' ' '\n' | xargs -P "$jobs" -I{} sh "$0" --one "$dir" {}
rc=0
for s in $specs; do
  name=$(basename "$s" .lua)
  r=$(cat "$dir/$name.rc" 2>/dev/null || echo 1)
  printf 'valgrind %s: %s\n' "$name" "$(grep -E '^[0-9]+ success' "$dir/$name.out" | tail -n 1)"
  grep -E "ERROR SUMMARY|Invalid|uninitialised|Mismatched" "$dir/$name.vg" | sort | uniq -c | head -20
  if [ "$r" -ne 0 ]; then
    echo "valgrind: $s failed (status $r); its output and valgrind's log:"
    cat "$dir/$name.out" "$dir/$name.vg"
    rc=1
  fi
done
rm -rf "$dir"
exit $rc
