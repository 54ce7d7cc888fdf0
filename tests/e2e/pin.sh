#!/bin/bash
# Git pinning end to end: a card whose entry point lives in a git repository (launch.source) runs
# locally from the commit its ref resolved to; refs that do not resolve and unreachable repos stop
# before anything is written; `render --pin` shows the SHA, plain `render` the ref as written.
# Repositories are local ones made here, never the network.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"
cache="$SCRATCH/git-cache"
upstream="$SCRATCH/upstream"
export GIT_AUTHOR_NAME=Test GIT_AUTHOR_EMAIL=test@example.invalid GIT_COMMITTER_NAME=Test \
    GIT_COMMITTER_EMAIL=test@example.invalid GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null

shell_scripts_ok() {
    local script
    for script in "$1"/*.sh "$1"/*.sbatch; do
        [ -e "$script" ] || continue
        if shellcheck "$script" >"$SCRATCH/shellcheck.txt" 2>&1; then pass; else fail "shellcheck $script:"$'\n'"$(cat "$SCRATCH/shellcheck.txt")"; fi
    done
}
run_count() { find "$results" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l; }

# The framework source: a repository holding the tiny workload's entry point.
mkdir -p "$upstream"
git -C "$upstream" init --quiet -b main
cp workloads/tiny-ddp/train.py "$upstream/"
git -C "$upstream" add train.py
git -C "$upstream" commit --quiet -m "tiny workload"
git -C "$upstream" tag v1
sha=$(git -C "$upstream" rev-parse HEAD)

# The card names the repository instead of shipping train.py beside itself.
work="$SCRATCH/card"
mkdir -p "$work"
card="$work/tiny-ddp.yaml"
cp workloads/tiny-ddp/tiny-ddp.yaml "$card"
printf '  source:\n    repo: %s\n    ref: main\n' "$upstream" >>"$card"

# 1. A real local run from the pinned commit.
expect_status 0 "run from launch.source" -- "$CCL_HARNESS" run "$card" --results "$results" --git-cache "$cache"
expect_output "the pin is printed" "pinned $upstream main -> ${sha:0:12}"
run=$(latest_run)
run=${run%/}
[ "$(run_json "$run" 'r["state"]')" = completed ] && pass || fail "state: $(run_json "$run" 'r["state"]')"
grep -qF -- "$sha" "$run/rendered/launch.sh" && pass || fail "launch.sh lacks the full SHA"
grep -qF -- "$upstream main" "$run/rendered/launch.sh" && fail "launch.sh checks out the branch name" || pass
[ ! -e "$run/rendered/train.py" ] && pass || fail "train.py was copied although it comes from the checkout"
[ "$(git -C "$run/rendered/src" rev-parse HEAD)" = "$sha" ] && pass || fail "the checkout is not at the pinned commit"
[ ! -e "$run/rendered/src.partial" ] && pass || fail "a partial checkout was left behind"
/usr/bin/python3 - "$run/plan.json" "$sha" "$upstream" <<'PY' && pass || fail "plan.json lacks the pinned commit: $(cat "$run/plan.json")"
import json, sys
source = json.load(open(sys.argv[1]))["source"]
assert source == {"repo": sys.argv[3], "ref": "main", "commit": sys.argv[2]}, source
PY
for rank in 0 1; do
    [ -s "$run/traces/kineto_trace_$rank.json" ] && pass || fail "no trace for rank $rank"
done
[ -d "$cache" ] && [ "$(find "$cache" -mindepth 1 -maxdepth 1 -name '*.git' -type d | wc -l)" -eq 1 ] && pass ||
    fail "the git cache holds no single clone: $(ls -a "$cache" 2>&1)"

# 2. Refs that do not resolve and repositories that cannot be reached: exit 2, no run directory.
before=$(run_count)
expect_status 2 "unknown ref" -- "$CCL_HARNESS" run "$card" --set launch.source.ref=no-such-branch --results "$results" --git-cache "$cache"
expect_output "unknown ref is named" "ref \"no-such-branch\" not found in \"$upstream\""
expect_output "known refs are listed" "branches: main; tags: v1"
expect_status 2 "missing repo" -- "$CCL_HARNESS" run "$card" --set "launch.source.repo=$SCRATCH/no-such-repo" --results "$results" \
    --git-cache "$cache"
expect_output "missing repo is named" "launch.source.repo: \"$SCRATCH/no-such-repo\": no such repository"
expect_status 2 "relative repo path" -- "$CCL_HARNESS" run "$card" --set launch.source.repo=upstream --results "$results" --git-cache "$cache"
expect_output "relative repo path is refused" "relative path"
[ "$(run_count)" -eq "$before" ] && pass || fail "a failed pin created a run directory"

# 3. render shows the ref as written; render --pin the SHA, fetched again after the branch moves.
expect_status 0 "render without --pin" -- "$CCL_HARNESS" render -q "$card" --out "$SCRATCH/render-ref"
grep -qF -- "$upstream main" "$SCRATCH/render-ref/launch.sh" && pass || fail "plain render does not show the ref"
grep -qF -- "$sha" "$SCRATCH/render-ref/launch.sh" && fail "plain render pinned the ref" || pass
grep -q '"commit"' "$SCRATCH/render-ref/plan.json" && fail "plain render's plan.json has a commit" || pass
shell_scripts_ok "$SCRATCH/render-ref"

echo "# moved" >>"$upstream/train.py"
git -C "$upstream" commit --quiet -am "move main"
moved=$(git -C "$upstream" rev-parse HEAD)
for cluster in local slurm-local perlmutter; do
    expect_status 0 "render --pin for $cluster" -- "$CCL_HARNESS" render -q "$card" --cluster "$cluster" --pin --git-cache "$cache" \
        --out "$SCRATCH/render-pin/$cluster"
    grep -qF -- "$moved" "$SCRATCH/render-pin/$cluster/"launch.* && pass || fail "render --pin for $cluster lacks the moved SHA"
    grep -qF -- "$moved" "$SCRATCH/render-pin/$cluster/plan.json" && pass || fail "plan.json for $cluster lacks the moved SHA"
    shell_scripts_ok "$SCRATCH/render-pin/$cluster"
done
expect_status 0 "render --pin of a tag" -- "$CCL_HARNESS" render -q "$card" --set launch.source.ref=v1 --pin --git-cache "$cache" \
    --out "$SCRATCH/render-tag"
grep -qF -- "$sha" "$SCRATCH/render-tag/launch.sh" && pass || fail "the tag was not pinned to its commit"
expect_status 2 "render --pin of an unknown ref" -- "$CCL_HARNESS" render -q "$card" --set launch.source.ref=nope --pin \
    --git-cache "$cache" --out "$SCRATCH/render-bad"
[ ! -e "$SCRATCH/render-bad" ] && pass || fail "a failed pin wrote a render"

# 4. A damaged cache entry is reported, not trusted.
entry=$(find "$cache" -mindepth 1 -maxdepth 1 -name '*.git' -type d | head -n 1)
rm -rf "$entry/objects" "$entry/HEAD"
expect_status 2 "damaged cache entry" -- "$CCL_HARNESS" render -q "$card" --pin --git-cache "$cache" --out "$SCRATCH/render-damaged"
expect_output "damaged entry is named" "$entry"

# A dry run is a preview: offline (here, a repository that cannot be fetched) it warns and shows
# the ref, where a real run stops.
expect_status 0 "dry run with an unreachable repo" -- "$CCL_HARNESS" run "$card" --dry-run \
    --set "launch.source.repo=$SCRATCH/no-such-repo" --results "$results" --git-cache "$SCRATCH/cache-dry"
expect_output "the dry run warns" "the dry run shows the ref as written"

finish
