#!/usr/bin/env bash
# The suite as parts run side by side: what `make test` runs.
#
#   spec/parts.sh [RUN ...]        RUN: main, spirv, ptx (default: all three)
#
# A part is one spec file in one run, in a busted process of its own:
#   main   every spec on GPUJIT_SPEC_BACKENDS (default cpu,opencl);
#   spirv  every spec but cuda_spec on opencl, each kernel through SPIR-V
#          (GPUJIT_OPENCL_FORMAT=spirv; spirv-val checks every module);
#   ptx    every spec but cuda_spec on the first compiling backend with the
#          cpu vectorizer off, each kernel also compiled to PTX into one
#          folder (GPUJIT_SPEC_PTX_DIR, spec/helpers.lua).
# These are the runs that opencl_spirv_spec and cuda_spec used to start
# inside one busted process, one after the other; here GJ_SPEC_RUNS (the runs
# of this runner) tells those two specs that the runner runs them, and
# cuda_spec runs last, alone, to assemble the PTX the ptx run left
# (GJ_SPEC_PTX_FROM).
#
# GPUJIT_TEST_JOBS parts run at once (default: the number of cores).  The
# longest parts start first (their times from the last run, in
# $GJ_PARTS_DIR/times, else the spec file's size).  Each part's output is in
# $GJ_PARTS_DIR/logs/RUN-NAME.log (default build/parts); a failed part's log
# is printed.  The last line is "N passed, N failed, N skipped", and the exit
# status is non-zero when a part failed or ended without busted's summary.
# Extra busted options: GJ_PARTS_BUSTED_OPTS; only some spec files:
# GJ_PARTS_FILES="spec/a_spec.lua spec/b_spec.lua".  A part still running
# after GJ_PART_TIMEOUT seconds (default 1500, several times the longest
# part under ASan) is killed and fails, its log saying so: a hang fails the
# run instead of holding it.
set -u
cd "$(dirname "$0")/.." || exit 1
runs=("$@")
[ ${#runs[@]} -eq 0 ] && runs=(main spirv ptx)
jobs=${GPUJIT_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
dir=${GJ_PARTS_DIR:-build/parts}
busted=${BUSTED:-/usr/bin/busted}
backends=${GPUJIT_SPEC_BACKENDS:-cpu,opencl}
mkdir -p "$dir" || exit 1
rm -rf "$dir/logs" "$dir/res" "$dir/ptx"
mkdir -p "$dir/logs" "$dir/res" "$dir/ptx"
case $dir in /*) ptxdir="$dir/ptx" ;; *) ptxdir="$PWD/$dir/ptx" ;; esac
first=${backends%%,*}
[ "$first" = cuda ] && first=cpu
[ "$first" = sim ] && first=cpu

has_run() { local r; for r in "${runs[@]}"; do [ "$r" = "$1" ] && return 0; done; return 1; }

# One part: RUN FILE.  Writes res/RUN-NAME: "passed failed skipped seconds status".
run_part() {
  local run=$1 file=$2 name log t0 t1 line env=()
  name=$(basename "$file" .lua)
  log="$GJ_PARTS_DIR_/logs/$run-$name.log"
  case $run in
    main)  env=(GPUJIT_SPEC_BACKENDS="$GJ_BACKENDS_") ;;
    spirv) env=(GPUJIT_SPEC_BACKENDS=opencl GPUJIT_OPENCL_FORMAT=spirv) ;;
    ptx)   env=(GPUJIT_SPEC_BACKENDS="$GJ_FIRST_" GPUJIT_VECTORIZE=0 GPUJIT_SPEC_PTX_DIR="$GJ_PTXDIR_") ;;
    last)  env=(GPUJIT_SPEC_BACKENDS="$GJ_BACKENDS_" GJ_SPEC_PTX_FROM="$GJ_PTXDIR_") ;;
  esac
  t0=$(date +%s)
  # a watchdog, not a speed limit: a part that hangs fails with its log
  # instead of holding the whole run until CI's own limit
  # shellcheck disable=SC2086
  timeout -k 30 "$GJ_PART_TIMEOUT_" env GJ_SPEC_RUNS="$GJ_RUNS_" "${env[@]}" \
    luajit "$GJ_BUSTED_" --ignore-lua -o utfTerminal $GJ_PARTS_BUSTED_OPTS "$file" > "$log" 2>&1
  t1=$(date +%s)
  if [ $((t1 - t0)) -ge "$GJ_PART_TIMEOUT_" ]; then
    echo "spec/parts.sh: $run $name killed after $((t1 - t0)) s (GJ_PART_TIMEOUT=$GJ_PART_TIMEOUT_): hung, or far slower than it should be" >> "$log"
  fi
  line=$(grep -E '^[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors? / [0-9]+ pending' "$log" | tail -n 1)
  if [ -z "$line" ]; then
    echo "0 1 0 $((t1 - t0)) nosummary" > "$GJ_PARTS_DIR_/res/$run-$name"
  else
    set -- $(echo "$line" | sed -E 's#^([0-9]+) success(es)? / ([0-9]+) failures? / ([0-9]+) errors? / ([0-9]+) pending.*#\1 \3 \4 \5#')
    echo "$1 $(($2 + $3)) $4 $((t1 - t0)) ok" > "$GJ_PARTS_DIR_/res/$run-$name"
  fi
  read -r p f s sec st < "$GJ_PARTS_DIR_/res/$run-$name"
  printf '[%s %s] %s passed, %s failed, %s skipped, %s s%s\n' "$run" "$name" "$p" "$f" "$s" "$sec" \
    "$([ "$st" = ok ] || echo ' (no summary)')"
}
export -f run_part
export GJ_PART_TIMEOUT_="${GJ_PART_TIMEOUT:-1500}"
export GJ_RUNS_="${runs[*]}" GJ_PARTS_DIR_="$dir" GJ_BACKENDS_="$backends" GJ_FIRST_="$first" GJ_PTXDIR_="$ptxdir" \
       GJ_BUSTED_="$busted" GJ_PARTS_BUSTED_OPTS="${GJ_PARTS_BUSTED_OPTS:-}"

# The parts, longest first.
weight() {   # RUN FILE -> seconds of the last run, else a guess from the size
  local w
  w=$(awk -v k="$1-$(basename "$2" .lua)" '$1 == k { print $2 }' "$dir/times" 2>/dev/null)
  [ -n "$w" ] && { echo "$w"; return; }
  echo $(( $(wc -c < "$2") / 1000 ))
}
list=$(for f in ${GJ_PARTS_FILES:-spec/*_spec.lua}; do
  for r in "${runs[@]}"; do
    case "$r:$(basename "$f")" in
      spirv:cuda_spec.lua|ptx:cuda_spec.lua) continue ;;
      main:cuda_spec.lua) has_run ptx && continue ;;
    esac
    echo "$(weight "$r" "$f") $r $f"
  done
done | sort -rn -k1,1 | awk '{ print $2 " " $3 }')

t0=$(date +%s)
echo "spec/parts.sh: $(echo "$list" | wc -l) parts (${runs[*]}), $jobs at a time, logs in $dir/logs"
echo "$list" | xargs -P "$jobs" -L 1 bash -c 'run_part "$@"' _
# cuda_spec after the ptx run: it assembles what that run left
if has_run ptx && has_run main; then run_part last spec/cuda_spec.lua; fi
t1=$(date +%s)

# Totals, failed parts' logs, the times for the next run's order.
passed=0 failed=0 skipped=0
bad=()
declare -A per
: > "$dir/times.new"
for r in "$dir"/res/*; do
  read -r p f s sec st < "$r"
  key=$(basename "$r")
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  per[${key%%-*}]=$(( ${per[${key%%-*}]:-0} + p ))
  echo "$key $sec" >> "$dir/times.new"
  if [ "$f" -ne 0 ] || [ "$st" != ok ]; then bad+=("$key"); fi
done
mv "$dir/times.new" "$dir/times"
for key in "${bad[@]}"; do
  echo "==== failed part: $key ($dir/logs/$key.log, last 150 lines)"
  tail -n 150 "$dir/logs/$key.log"
done
# The SPIR-V run must have run the suite, not a handful of specs.
if has_run spirv && [ -z "${GJ_PARTS_FILES:-}" ] && [ "${per[spirv]:-0}" -lt 500 ]; then
  echo "spec/parts.sh: the SPIR-V run passed only ${per[spirv]:-0} specs (at least 500 expected)"
  failed=$((failed + 1))
fi
summary=""
for k in "${!per[@]}"; do summary="$summary $k ${per[$k]}"; done
echo "spec/parts.sh: $(ls "$dir/res" | wc -l) parts in $((t1 - t0)) s; passed by run:$summary"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
