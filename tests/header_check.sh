#!/bin/sh
# Compiles each public header alone, as C11 and as C++11, warnings as errors.
# usage: header_check.sh INCLUDE_DIR CC CXX
set -u
inc=$1 cc=$2 cxx=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
for h in "$inc"/pixflow/*.h; do
  name=pixflow/$(basename "$h")
  printf '#include "%s"\ntypedef int pf_header_check_unit;\n' "$name" > "$tmp/t.c"
  n=$((n + 1))
  if ! "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$inc" "$tmp/t.c"; then
    echo "FAIL (C11): $name"; fail=$((fail + 1))
  fi
  if ! "$cxx" -std=c++11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -x c++ -I"$inc" "$tmp/t.c"; then
    echo "FAIL (C++11): $name"; fail=$((fail + 1))
  fi
done
echo "header hygiene: $n headers, $fail failures"
[ "$fail" -eq 0 ]
