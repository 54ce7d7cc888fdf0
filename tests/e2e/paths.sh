#!/bin/bash
# Paths as users type them: the default `results/`, relative cards, bundles, run directories,
# --out, --results and --git-cache, from the checkout root and from an unrelated directory. Ranks
# and sbatch start in other directories than the harness, so a relative path that is not made
# absolute before it leaves the process names nothing (issue 11: the README's own command failed).
source "$(dirname "$0")/lib.sh"
export GIT_AUTHOR_NAME=Test GIT_AUTHOR_EMAIL=test@example.invalid GIT_COMMITTER_NAME=Test \
    GIT_COMMITTER_EMAIL=test@example.invalid GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null

bundle_of() { sed -n 's/^  bundle: \(.*\) ([0-9]* files.*/\1/p' <<<"$1" | tail -n 1; }
dir_of() { sed -n 's/^  run directory: //p' <<<"$1" | tail -n 1; }

# 1. From an unrelated directory, everything relative, default --results: the layout a user has
#    after `cd ~/experiments` with the card copied beside them.
elsewhere="$SCRATCH/elsewhere"
mkdir -p "$elsewhere/cards"
cp "$CCL_SOURCE_DIR"/workloads/tiny-ddp/* "$elsewhere/cards/"
cd "$elsewhere"
expect_status 0 "run, relative card, default results" -- "$CCL_HARNESS" run cards/tiny-ddp.yaml
run_dir=$(dir_of "$OUT")
bundle=$(bundle_of "$OUT")
case "$run_dir" in "$elsewhere"/results/tiny-ddp-*) pass ;; *) fail "run directory not under ./results: [$run_dir]" ;; esac
[ -f "$bundle" ] && pass || fail "no bundle at [$bundle]"
[ "$(run_json "$run_dir" 'r["state"]')" = completed ] && pass || fail "state: $(run_json "$run_dir" 'r["state"]')"
[ -s "$run_dir/traces/kineto_trace_0.json" ] && [ -s "$run_dir/traces/kineto_trace_1.json" ] && pass ||
    fail "traces missing in $run_dir/traces"
rel_bundle="results/$(basename "$bundle")"
rel_run="results/$(basename "$run_dir")"

expect_status 0 "verify a relative bundle" -- "$CCL_HARNESS" verify "$rel_bundle"
expect_status 0 "metrics of a relative run directory" -- "$CCL_HARNESS" metrics "$rel_run"
expect_status 0 "pack a relative run directory to a relative --out" -- "$CCL_HARNESS" pack "$rel_run" --out again.tar.zst
[ -f "$elsewhere/again.tar.zst" ] && pass || fail "pack --out again.tar.zst wrote nothing in the current directory"
expect_status 0 "status of the default results" -- "$CCL_HARNESS" status
expect_output "status lists the run" "$(basename "$run_dir")"
expect_status 0 "compare relative paths" -- "$CCL_HARNESS" compare "$rel_bundle" "$rel_run" --html page.html
[ -s page.html ] && pass || fail "compare --html page.html wrote nothing here"
expect_status 0 "render to a relative --out" -- "$CCL_HARNESS" render cards/tiny-ddp.yaml --out rendered-here
[ -x rendered-here/launch.sh ] && pass || fail "render --out rendered-here has no launch.sh"

# reproduce runs again from a relative bundle into the default results/.
expect_status 0 "reproduce a relative bundle" -- "$CCL_HARNESS" reproduce "$rel_bundle"
copy=$(bundle_of "$OUT")
[ -f "$copy" ] && [ "$copy" != "$bundle" ] && pass || fail "reproduce made no new bundle: [$copy]"

# 2. From a subdirectory, with ../ in every path and an explicit relative --results.
mkdir -p "$elsewhere/sub/deeper"
cd "$elsewhere/sub/deeper"
expect_status 0 "run with ../ paths and a relative --results" -- "$CCL_HARNESS" run ../../cards/tiny-ddp.yaml --results ../out
run_dir=$(dir_of "$OUT")
case "$run_dir" in "$elsewhere"/sub/out/tiny-ddp-*) pass ;; *) fail "run directory not under ../out: [$run_dir]" ;; esac

# 3. A relative --git-cache, with the entry point from a git repository (launch.source).
upstream="$SCRATCH/upstream"
mkdir -p "$upstream"
git -C "$upstream" init --quiet -b main
cp "$CCL_SOURCE_DIR/workloads/tiny-ddp/train.py" "$upstream/"
git -C "$upstream" add train.py
git -C "$upstream" commit --quiet -m "tiny workload"
mkdir -p "$elsewhere/pinned"
cp "$CCL_SOURCE_DIR/workloads/tiny-ddp/tiny-ddp.yaml" "$elsewhere/pinned/"
printf '  source:\n    repo: %s\n    ref: main\n' "$upstream" >>"$elsewhere/pinned/tiny-ddp.yaml"
cd "$elsewhere/pinned"
expect_status 0 "run with a relative --git-cache" -- "$CCL_HARNESS" run tiny-ddp.yaml --git-cache cache --results res
[ -n "$(ls -d cache/*.git 2>/dev/null)" ] && pass || fail "no clone under ./cache"

# 4. The README's commands as .ci/run reads them: two Quick start commands, the second .ci/run,
#    and a test command. A reworded README must not leave CI running nothing.
mapfile -t quick_start < <("$CCL_SOURCE_DIR/.ci/readme_commands" "$CCL_SOURCE_DIR/README.md")
[ "${#quick_start[@]}" -eq 2 ] && [ "${quick_start[1]}" = .ci/run ] && pass ||
    fail "README Quick start: [${quick_start[*]}]"
case "${quick_start[0]}" in *"build/ccl-harness run workloads/tiny-ddp/tiny-ddp.yaml"*) pass ;; *) fail "README command 1: [${quick_start[0]}]" ;; esac
case "$("$CCL_SOURCE_DIR/.ci/readme_commands" --test-command "$CCL_SOURCE_DIR/README.md")" in
ctest\ *) pass ;; *) fail "README names no ctest test command" ;; esac

# 5. From the checkout root, the README's card path as written; --results stays in the build tree
#    so that the suite leaves nothing in the source tree (.ci/run runs the README's command verbatim).
cd "$CCL_SOURCE_DIR"
expect_status 0 "README command from the checkout root" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$SCRATCH/root-results"
[ -f "$(bundle_of "$OUT")" ] && pass || fail "no bundle from the checkout root"

finish
