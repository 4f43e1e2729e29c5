#!/bin/sh
# Time bench/nobarrier.lua (or the bench given as $2) with two builds: the
# commit $1 (built in a temporary worktree) and the working tree, runs
# interleaved (base, head, base, head, ...) so that machine noise hits both
# alike.  Prints per kernel the median over runs of each build and the ratio
# head/base.  Usage: sh bench/before_after.sh <base-commit> [bench.lua] [runs]
set -e
base=${1:?usage: before_after.sh <base-commit> [bench.lua] [runs]}
bench=${2:-bench/nobarrier.lua}
runs=${3:-5}
root=$(pwd)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/base" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
git worktree add --detach "$tmp/base" "$base" >/dev/null 2>&1
make -s -C "$tmp/base" all >/dev/null
make -s all >/dev/null
i=0
while [ $i -lt "$runs" ]; do
  (cd "$tmp/base" && LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;" \
    luajit "$root/$bench") | sed 's/^/base /' >> "$tmp/out"
  LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;" luajit "$bench" \
    | sed 's/^/head /' >> "$tmp/out"
  i=$((i + 1))
done
luajit - "$tmp/out" "$runs" <<'LUA'
local med = {}
for line in io.lines(arg[1]) do
  local who, name, ms = line:match("^(%S+) (%S+) (%S+)$")
  med[name] = med[name] or { base = {}, head = {} }
  table.insert(med[name][who], tonumber(ms))
end
local names = {}
for n in pairs(med) do names[#names + 1] = n end
table.sort(names)
local function m(t) table.sort(t); return t[math.floor((#t + 1) / 2)] end
print(string.format("%-18s %10s %10s %8s", "kernel", "base ms", "head ms", "head/base"))
if #names == 0 then error("no timings: the bench failed (see above)") end
for _, n in ipairs(names) do
  if #med[n].base ~= tonumber(arg[2]) or #med[n].head ~= tonumber(arg[2]) then
    error(n .. ": some runs failed (see above)")
  end
  local b, h = m(med[n].base), m(med[n].head)
  print(string.format("%-18s %10.3f %10.3f %8.3f", n, b, h, h / b))
end
LUA
