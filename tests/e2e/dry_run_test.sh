#!/usr/bin/env bash
# End-to-end tests of `allot schedule --dry-run` on YAML cases.
#
# usage: dry_run_test.sh /path/to/allot CASES_DIR [CASE_NAME...]
#
# Each directory under CASES_DIR is one case. Its inputs are input.yaml, or
# every *.yaml in it (in name order), passed as `-f NAME` from inside the
# case directory, so error messages name files by their base name. Expected
# results, one or more of:
#   expected.json          exit 0; stdout must equal this file byte for byte,
#                          except that the free-form text of each pending
#                          workload's "reason" is masked to "*" on both sides.
#   expected_contains.txt  exit 0; each non-empty line must occur in stdout.
#   expected_error.txt     exit 2; stdout empty; each non-empty line must
#                          occur in stderr.
# Prints "ok NAME" or "FAIL NAME" (with details) per case, then
# "N passed, M failed"; exits 1 if any case failed.
set -u

if [[ $# -lt 2 ]]; then
  echo "usage: $0 /path/to/allot CASES_DIR [CASE_NAME...]" >&2
  exit 2
fi
allot=$1
cases_dir=$2
shift 2
case "$allot" in /*) ;; *) allot="$PWD/$allot" ;; esac
if [[ ! -x "$allot" ]]; then
  echo "$0: $allot is not an executable" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Masks the text of pending reasons: in the output, a pending entry is
# {"workload":..,"clusterQueue":..,"position":N,"reason":"TEXT"}.
mask_reasons() {
  sed -E 's/("position":-?[0-9]+,"reason":)"([^"\\]|\\.)*"/\1"*"/g' "$1"
}

# One JSON element per line, so that a diff points at the difference.
split_json() {
  sed -E 's/\},\{/},\n{/g; s/\[\{/[\n{/g; s/\],"/],\n"/g' "$1"
}

# Every non-empty line of $1 must occur in file $2.
check_contains() {
  local patterns=$1 haystack=$2 line rc=0
  while IFS= read -r line || [[ -n "$line" ]]; do
    [[ -z "$line" ]] && continue
    if ! grep -qF -- "$line" "$haystack"; then
      echo "    missing: $line"
      rc=1
    fi
  done <"$patterns"
  return $rc
}

run_case() {
  local dir=$1 name=$2 out=$tmp/out err=$tmp/err log=$tmp/log rc
  local -a flags=()
  : >"$log"
  if [[ -f "$dir/input.yaml" ]]; then
    flags=(-f input.yaml)
  else
    local f
    for f in "$dir"/*.yaml; do
      [[ -e "$f" ]] && flags+=(-f "$(basename "$f")")
    done
  fi
  if [[ ${#flags[@]} -eq 0 ]]; then
    echo "    no input.yaml or *.yaml" >>"$log"
    return 1
  fi
  if [[ ! -f "$dir/expected.json" && ! -f "$dir/expected_contains.txt" &&
        ! -f "$dir/expected_error.txt" ]]; then
    echo "    no expected.json, expected_contains.txt or expected_error.txt" >>"$log"
    return 1
  fi
  (cd "$dir" && timeout 60 "$allot" schedule --dry-run "${flags[@]}") \
    >"$out" 2>"$err"
  rc=$?
  local failed=0
  if [[ -f "$dir/expected_error.txt" ]]; then
    if [[ $rc -ne 2 ]]; then
      echo "    exit code $rc, want 2" >>"$log"
      failed=1
    fi
    if [[ -s "$out" ]]; then
      echo "    stdout not empty:" >>"$log"
      head -c 2000 "$out" | sed 's/^/      /' >>"$log"
      failed=1
    fi
    if ! check_contains "$dir/expected_error.txt" "$err" >>"$log"; then
      echo "    stderr was:" >>"$log"
      sed 's/^/      /' "$err" >>"$log"
      failed=1
    fi
    return $failed
  fi
  if [[ $rc -ne 0 ]]; then
    echo "    exit code $rc, want 0; stderr:" >>"$log"
    sed 's/^/      /' "$err" >>"$log"
    return 1
  fi
  if [[ -f "$dir/expected.json" ]]; then
    mask_reasons "$dir/expected.json" >"$tmp/want"
    mask_reasons "$out" >"$tmp/got"
    if ! cmp -s "$tmp/want" "$tmp/got"; then
      echo "    stdout differs from expected.json (- want, + got):" >>"$log"
      split_json "$tmp/want" >"$tmp/want.split"
      split_json "$tmp/got" >"$tmp/got.split"
      diff -u "$tmp/want.split" "$tmp/got.split" | tail -n +3 |
        sed 's/^/      /' >>"$log"
      failed=1
    fi
  fi
  if [[ -f "$dir/expected_contains.txt" ]]; then
    if ! check_contains "$dir/expected_contains.txt" "$out" >>"$log"; then
      echo "    stdout was:" >>"$log"
      split_json "$out" | sed 's/^/      /' >>"$log"
      failed=1
    fi
  fi
  return $failed
}

passed=0
failed=0
if [[ $# -gt 0 ]]; then
  names=("$@")
else
  names=()
  for d in "$cases_dir"/*/; do
    [[ -d "$d" ]] && names+=("$(basename "$d")")
  done
fi
for name in "${names[@]}"; do
  if run_case "$cases_dir/$name" "$name"; then
    echo "ok $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name"
    cat "$tmp/log"
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
