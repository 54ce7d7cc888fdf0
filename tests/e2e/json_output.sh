#!/bin/bash
# --json and -q on the commands that report (run, render, sweep, reproduce): exactly one JSON
# document on stdout, progress and rank output on stderr (or nowhere with -q), the same facts as
# on disk; a failed run still reports its JSON; bad input answers {"error", "exit"} on stdout
# (issue 31 D12), every command with --json.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
card=workloads/tiny-ddp/tiny-ddp.yaml

# json_of FILE EXPR: evaluates a Python expression over the JSON document in FILE (as j); fails
# when FILE is not exactly one JSON document.
json_of() {
    /usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
# run_cmd NAME COMMAND...: stdout to $SCRATCH/NAME.out, stderr to $SCRATCH/NAME.err, exit code in $code.
run_cmd() {
    local name=$1
    shift
    code=0
    "$@" >"$SCRATCH/$name.out" 2>"$SCRATCH/$name.err" || code=$?
}
expect_code() { # expect_code WANT WHAT
    if [ "$code" -eq "$1" ]; then pass; else
        fail "$2: exit $code, wanted $1; stderr:"$'\n'"$(tail -n 20 "$SCRATCH/$name.err")"
    fi
}
expect_true() { # expect_true WHAT FILE EXPR: EXPR over the JSON in FILE must be True
    local got
    got=$(json_of "$2" "$3" 2>&1) || true
    if [ "$got" = True ]; then pass; else fail "$1: [$3] gave [$got]"; fi
}
# check_bundle FILE: the bundle named in the run JSON exists and its sha256 is the one reported.
check_bundle() {
    local path sha
    path=$(json_of "$1" 'j["bundle"]["path"]')
    sha=$(json_of "$1" 'j["bundle"]["sha256"]')
    [ -f "$path" ] && [ "$(sha256sum "$path" | cut -d' ' -f1)" = "$sha" ] && pass || fail "bundle [$path] sha256 [$sha]"
}

# 1. The real workload from the checkout root, with a relative --results: stdout is the JSON
#    document only, rank output went to stderr.
rel_results=$(realpath --relative-to="$CCL_SOURCE_DIR" "$SCRATCH/results")
name=run
run_cmd run "$CCL_HARNESS" run $card --results "$rel_results" --json
expect_code 0 "run --json"
expect_true "run: completed" "$SCRATCH/run.out" 'j["state"] == "completed" and j["exit_code"] == 0 and j["dry_run"] is False'
expect_true "run: run_dir absolute and there" "$SCRATCH/run.out" \
    '__import__("os").path.isabs(j["run_dir"]) and __import__("os").path.isdir(j["run_dir"])'
expect_true "run: run_dir under --results" "$SCRATCH/run.out" \
    'j["run_dir"].startswith("'"$SCRATCH/results/"'")'
expect_true "run: run id names the directory" "$SCRATCH/run.out" 'j["run_dir"].endswith("/" + j["run_id"])'
expect_true "run: card and target" "$SCRATCH/run.out" 'j["card"] == "tiny-ddp" and j["target"] == "local"'
expect_true "run: traces listed and there" "$SCRATCH/run.out" \
    'sorted(t.rsplit("/",1)[1] for t in j["traces"]) == ["kineto_trace_0.json", "kineto_trace_1.json"] and all(__import__("os").path.isfile(t) for t in j["traces"])'
check_bundle "$SCRATCH/run.out"
expect_true "run: bundle file count" "$SCRATCH/run.out" 'j["bundle"]["files"] > 5'
run_dir=$(json_of "$SCRATCH/run.out" 'j["run_dir"]')
[ "$(run_json "$run_dir" 'r["state"]')" = completed ] && pass || fail "run.json state"
grep -qF "[rank_1] " "$SCRATCH/run.err" && pass || fail "rank output not on stderr"
grep -qF "[rank_" "$SCRATCH/run.out" && fail "rank output on stdout" || pass
bundle=$(json_of "$SCRATCH/run.out" 'j["bundle"]["path"]')

# 2. From another directory, relative card and --results, with -q: nothing but the JSON.
elsewhere="$SCRATCH/elsewhere"
mkdir -p "$elsewhere"
rel_card=$(realpath --relative-to="$elsewhere" "$CCL_SOURCE_DIR/$card")
(cd "$elsewhere" && run_cmd run_q "$CCL_HARNESS" run "$rel_card" --results out --json -q; echo "$code" >"$SCRATCH/run_q.code")
code=$(cat "$SCRATCH/run_q.code")
name=run_q
expect_code 0 "run --json -q from elsewhere"
expect_true "run -q: run_dir in the caller's directory" "$SCRATCH/run_q.out" \
    'j["run_dir"].startswith("'"$elsewhere/out/"'") and __import__("os").path.isdir(j["run_dir"])'
check_bundle "$SCRATCH/run_q.out"
[ ! -s "$SCRATCH/run_q.err" ] && pass || fail "-q --json printed on stderr:"$'\n'"$(cat "$SCRATCH/run_q.err")"
[ -f "$(json_of "$SCRATCH/run_q.out" 'j["run_dir"]')/logs/rank_1.log" ] && pass || fail "-q dropped the rank logs"

# Fixtures: the card with a stand-in entry point that fails (or succeeds) at once.
work="$SCRATCH/card"
mkdir -p "$work"
cp $card "$work/"
cp "$(dirname "$0")/fixtures/misbehave.py" "$work/"
results="$SCRATCH/results"

# 3. -q without --json: the result lines only, no progress, no rank output.
run_cmd quiet "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --set launch.script=misbehave.py --results "$results" -q
name=quiet
expect_code 0 "run -q"
grep -q "^run .* completed" "$SCRATCH/quiet.out" && grep -q "^  bundle: " "$SCRATCH/quiet.out" && pass ||
    fail "run -q result lines:"$'\n'"$(cat "$SCRATCH/quiet.out")"
grep -qE "\[rank_|starting|-> " "$SCRATCH/quiet.out" "$SCRATCH/quiet.err" && fail "run -q printed progress" || pass

# 4. A failing run still prints its JSON: state failed, exit 1, no bundle.
run_cmd failed env MISBEHAVE=fail "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --set launch.script=misbehave.py \
    --results "$results" --grace 1 --json
name=failed
expect_code 1 "a failing run --json"
expect_true "failed run JSON" "$SCRATCH/failed.out" \
    'j["state"] == "failed" and j["exit_code"] == 1 and j["bundle"] is None and "rank_1" in j["reason"]'
expect_true "failed run: run_dir there" "$SCRATCH/failed.out" '__import__("os").path.isfile(j["run_dir"] + "/run.json")'

# 5. run --json --dry-run: a preview, no run directory.
before=$(ls "$results" | wc -l)
run_cmd dry "$CCL_HARNESS" run $card --results "$results" --dry-run --json
name=dry
expect_code 0 "run --dry-run --json"
expect_true "dry run JSON" "$SCRATCH/dry.out" \
    'j["dry_run"] is True and j["run_dir"] is None and j["state"] is None and "local ranks" in j["preview"]["submission"]'
[ "$(ls "$results" | wc -l)" -eq "$before" ] && pass || fail "--dry-run --json created a run directory"

# 6. render --json lists exactly the files written to --out, with their sha256.
run_cmd render "$CCL_HARNESS" render $card --out "$SCRATCH/render" --json
name=render
expect_code 0 "render --json"
expect_true "render JSON" "$SCRATCH/render.out" \
    'j["out"] == "'"$SCRATCH/render"'" and j["target"] == "local" and j["framework"] == "torch-ddp" and j["dry_run"] is False'
listed=$(json_of "$SCRATCH/render.out" '"\n".join(sorted(f["name"] for f in j["files"]))')
written=$(cd "$SCRATCH/render" && find . -type f | sed 's|^\./||' | sort)
[ -n "$listed" ] && [ "$listed" = "$written" ] && pass || fail "render --json files [$listed] vs written [$written]"
hashes=$(json_of "$SCRATCH/render.out" '"\n".join(f["sha256"] + "  " + f["name"] for f in j["files"])')
(cd "$SCRATCH/render" && sha256sum --quiet -c <<<"$hashes") && pass || fail "render --json sha256s"
expect_true "render: launch script executable" "$SCRATCH/render.out" \
    '[f["executable"] for f in j["files"] if f["name"] == j["launch_script"]] == [True]'
grep -q "^rendered tiny-ddp" "$SCRATCH/render.err" && pass || fail "render summary not on stderr"
run_cmd render_dry "$CCL_HARNESS" render $card --out "$SCRATCH/render-dry" --json --dry-run
name=render_dry
expect_code 0 "render --json --dry-run"
[ ! -e "$SCRATCH/render-dry" ] && pass || fail "render --dry-run wrote files"
expect_true "render dry run lists the files" "$SCRATCH/render_dry.out" 'j["dry_run"] is True and len(j["files"]) >= 5'

# 7. sweep --json over two points: the same points sweep.json records.
run_cmd sweep "$CCL_HARNESS" sweep "$work/tiny-ddp.yaml" --cluster local --vary launch.script=misbehave.py \
    --vary launch.steps=10,12 --results "$SCRATCH/sweeps" --json
name=sweep
expect_code 0 "sweep --json"
expect_true "sweep JSON" "$SCRATCH/sweep.out" \
    '[p["state"] for p in j["points"]] == ["completed", "completed"] and j["exit_code"] == 0 and j["dry_run"] is False'
expect_true "sweep JSON points are sweep.json's" "$SCRATCH/sweep.out" \
    'j["points"] == json.load(open(j["sweep_dir"] + "/sweep.json"))["points"]'
expect_true "sweep points' bundles there" "$SCRATCH/sweep.out" \
    'all(__import__("os").path.isfile(p["bundle"]) and __import__("os").path.isdir(p["run_dir"]) for p in j["points"])'
grep -qF "[rank_1] " "$SCRATCH/sweep.err" && pass || fail "sweep rank output not on stderr"
run_cmd sweep_dry "$CCL_HARNESS" sweep $card --vary launch.steps=10,6 --results "$SCRATCH/sweeps-dry" --json --dry-run
name=sweep_dry
expect_code 0 "sweep --json --dry-run"
expect_true "sweep dry run JSON" "$SCRATCH/sweep_dry.out" \
    'j["sweep_dir"] is None and [p["state"] for p in j["points"]] == ["pending", "skipped"]'

# 8. reproduce --json --dry-run of the bundle from 1.
run_cmd repro "$CCL_HARNESS" reproduce "$bundle" --dry-run --results "$results" --json
name=repro
expect_code 0 "reproduce --json --dry-run"
expect_true "reproduce JSON" "$SCRATCH/repro.out" \
    'j["valid"] and j["scripts"]["identical"] and j["dry_run"] and j["run"] is None and j["target"] == "local" and j["error"] is None'
grep -qF "files identical to the bundle's" "$SCRATCH/repro.err" && pass || fail "reproduce progress not on stderr"

# 9. Bad input: exit 2, one error on stderr, and with --json one document on stdout that says it:
#    {"error": <the message>, "exit": 2}, so a script reading stdout never gets an empty stream.
bad() { # bad NAME COMMAND...
    local what=$1
    shift
    run_cmd bad "$@"
    name=bad
    expect_code 2 "$what"
    expect_true "$what: one document with the error and the exit status" "$SCRATCH/bad.out" \
        'j["exit"] == 2 and isinstance(j["error"], str) and len(j["error"]) > 0'
    grep -q "^ccl-harness: error: \|: error: " "$SCRATCH/bad.err" && pass || fail "$what: no error on stderr"
}
bad "run: missing card" "$CCL_HARNESS" run "$SCRATCH/nope.yaml" --json --results "$results"
bad "run: card that cannot run" "$CCL_HARNESS" run $card --set launch.steps=6 --json --results "$results"
bad "render: missing card" "$CCL_HARNESS" render "$SCRATCH/nope.yaml" --json --out "$SCRATCH/render-bad"
bad "sweep: missing card" "$CCL_HARNESS" sweep "$SCRATCH/nope.yaml" --vary launch.steps=10 --json --results "$results"
bad "submit: missing bundle" "$CCL_HARNESS" submit "$SCRATCH/nope.tar.zst" --to http://127.0.0.1:9 --json
bad "metrics: missing trace" "$CCL_HARNESS" metrics "$SCRATCH/nope" --json
bad "compare: one run" "$CCL_HARNESS" compare "$SCRATCH/nope.tar.zst" --json
bad "pack: not a run directory" "$CCL_HARNESS" pack "$SCRATCH" --json
bad "explain: missing card" "$CCL_HARNESS" explain "$SCRATCH/nope.yaml" --json
bad "adopt: missing script" "$CCL_HARNESS" adopt "$card" "$SCRATCH/nope.sh" --json
bad "status: not a results directory" "$CCL_HARNESS" status "$SCRATCH/nope" --json
bad "ingest: missing card" "$CCL_HARNESS" ingest "$SCRATCH/nope.yaml" "$SCRATCH" --json --results "$results"
bad "attach: not a run directory" "$CCL_HARNESS" attach "$SCRATCH/nope" --json
bad "build: missing card" "$CCL_HARNESS" build "$SCRATCH/nope.yaml" --json
# validate, verify and reproduce answer with their own document, which says what failed.
run_cmd bad "$CCL_HARNESS" reproduce "$SCRATCH/nope.tar.zst" --json
name=bad
expect_code 2 "reproduce: missing bundle"
expect_true "reproduce: its own document" "$SCRATCH/bad.out" 'j["error"] is not None'
bad "run: unknown option" "$CCL_HARNESS" run $card --json --no-such-option
expect_true "the usage error is the document's" "$SCRATCH/bad.out" '"--no-such-option" in j["error"]'
bad "validate: unknown option" "$CCL_HARNESS" validate $card --json --no-such-option
# --help is no failure: help text, exit 0, no document.
run_cmd help "$CCL_HARNESS" render --json --help
name=help
expect_code 0 "render --json --help"
grep -q "^Usage:\|^usage:\|--json" "$SCRATCH/help.out" && pass || fail "render --json --help printed no help"
[ ! -e "$SCRATCH/render-bad" ] && pass || fail "a refused render wrote files"

finish
