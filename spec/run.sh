#!/bin/sh
# Run the busted suite under LuaJIT and end with the plain line
# "N passed, N failed, N skipped" that CI counts.  Fails when busted
# reports a failure or an error, or ends without its summary line.
# BUSTED: busted's script, where it is not /usr/bin/busted.
# --ignore-lua: this already is LuaJIT; .busted's `lua` would start a second one.
out=$(mktemp)
luajit "${BUSTED:-/usr/bin/busted}" --ignore-lua "$@" 2>&1 | tee "$out"
line=$(grep -E '^[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors? / [0-9]+ pending' "$out" | tail -n 1)
rm -f "$out"
if [ -z "$line" ]; then
  echo "busted ended without a summary"
  echo "0 passed, 1 failed"
  exit 1
fi
set -- $(echo "$line" | sed -E 's#^([0-9]+) success(es)? / ([0-9]+) failures? / ([0-9]+) errors? / ([0-9]+) pending.*#\1 \3 \4 \5#')
failed=$(($2 + $3))
echo "$1 passed, $failed failed, $4 skipped"
[ "$failed" -eq 0 ]
