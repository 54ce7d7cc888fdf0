#!/bin/bash
# Bad input through the command line: one clear error, exit 2, nothing half-written.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
tiny=workloads/tiny-ddp/tiny-ddp.yaml
work="$SCRATCH/cards"
mkdir -p "$work"
cp workloads/tiny-ddp/* "$work/"

edit() { # edit NAME SED-EXPRESSION: a copy of the tiny card with one change
    sed "$2" "$tiny" >"$work/$1.yaml"
    echo "$work/$1.yaml"
}

expect_status 0 "--help" -- "$CCL_HARNESS" --help
expect_output "--help lists render" "render"
expect_status 0 "render --help" -- "$CCL_HARNESS" render --help
expect_output "render --help teaches --set" "--set"
expect_status 2 "no subcommand" -- "$CCL_HARNESS"
expect_status 2 "unknown subcommand" -- "$CCL_HARNESS" frobnicate
expect_status 2 "unknown flag" -- "$CCL_HARNESS" validate --frob "$tiny"

expect_status 0 "valid card" -- "$CCL_HARNESS" validate --strict "$tiny"
expect_status 2 "missing file" -- "$CCL_HARNESS" validate "$work/nope.yaml"
expect_output "missing file named" "nope.yaml: cannot read"
expect_status 2 "directory as card" -- "$CCL_HARNESS" validate "$work"

printf 'version: 1\nworkload:\n  model: [unclosed\n' >"$work/broken.yaml"
expect_status 2 "broken YAML" -- "$CCL_HARNESS" validate "$work/broken.yaml"
expect_output "broken YAML position" "broken.yaml:4:1: invalid YAML"

card=$(edit wrong-type 's/^    tp: 1$/    tp: four/')
expect_status 2 "wrong type" -- "$CCL_HARNESS" validate "$card"
expect_output "wrong type message" "wrong-type.yaml:54:9: Model-executor.model_plan_parallelization.tp: expected a positive integer, got \"four\""

card=$(edit unknown-key 's/^    dp_shard: 1$/    dp_shrad: 1/')
expect_status 2 "unknown key next to a missing required one" -- "$CCL_HARNESS" validate "$card"
expect_output "did you mean" "did you mean \"dp_shard\"?"

card=$(edit extra-key 's/^  steps: 12$/  steps: 12\n  stepz: 3/')
expect_status 0 "unknown key alone only warns" -- "$CCL_HARNESS" validate "$card"
expect_output "unknown key warning" "launch.stepz: unknown key, ignored; did you mean \"steps\"?"

card=$(edit inconsistent 's/^    dp_replicate: 2$/    dp_replicate: 4/')
expect_status 0 "inconsistent parallelism passes the archive level" -- "$CCL_HARNESS" validate "$card"
expect_status 2 "inconsistent parallelism fails --strict" -- "$CCL_HARNESS" validate --strict "$card"
expect_output "parallelism message" "tp·pp·cp·dp_replicate·dp_shard = 1·1·1·4·1 = 4, but total_count is 2"
expect_status 2 "render --strict refuses it too" -- "$CCL_HARNESS" render --strict "$card" --out "$SCRATCH/never"
[ ! -e "$SCRATCH/never" ] && pass || fail "render --strict wrote output for an invalid card"

card=$(edit hostile-env 's/^      GLOO_SOCKET_IFNAME: lo$/      "BAD KEY": x/')
expect_status 2 "env key that is not an identifier" -- "$CCL_HARNESS" validate "$card"
expect_output "env key message" "expected an environment variable name"

card=$(edit unknown-framework 's/^    name: torch-ddp$/    name: deepspeed/')
expect_status 2 "unknown framework" -- "$CCL_HARNESS" render "$card" --out "$SCRATCH/uf"
expect_output "no template line" "no template for framework \"deepspeed\" on target \"local\"; templates exist for:"

expect_status 2 "unknown cluster" -- "$CCL_HARNESS" render "$tiny" --cluster perlmuter --out "$SCRATCH/uc"
expect_output "cluster suggestion" "unknown cluster \"perlmuter\" (did you mean \"perlmutter\"?)"

expect_status 2 "bad --set" -- "$CCL_HARNESS" render "$tiny" --set nonsense --out "$SCRATCH/bs"
expect_output "bad --set message" "expected PATH=VALUE"
expect_status 2 "--set with a wrong type" -- "$CCL_HARNESS" validate --set launch.steps=many "$tiny"
expect_output "--set location" "--set launch.steps=many: launch.steps: expected a positive integer, got \"many\""

# --out: unwritable, a file, a directory that is not an earlier render.
touch "$SCRATCH/a-file"
expect_status 2 "--out under a file" -- "$CCL_HARNESS" render "$tiny" --out "$SCRATCH/a-file/out"
expect_status 2 "--out is a file" -- "$CCL_HARNESS" render "$tiny" --out "$SCRATCH/a-file"
mkdir -p "$SCRATCH/precious" && echo keep >"$SCRATCH/precious/notes.txt"
expect_status 2 "--out holds other files" -- "$CCL_HARNESS" render "$tiny" --out "$SCRATCH/precious"
[ "$(cat "$SCRATCH/precious/notes.txt")" = keep ] && pass || fail "render touched a foreign directory"
if [ "$(id -u)" -ne 0 ]; then
    mkdir -p "$SCRATCH/locked" && chmod 0500 "$SCRATCH/locked"
    expect_status 2 "--out in an unwritable directory" -- "$CCL_HARNESS" render "$tiny" --out "$SCRATCH/locked/out"
    chmod 0700 "$SCRATCH/locked"
fi

# A re-render replaces the previous one whole: no stale files survive.
"$CCL_HARNESS" render -q "$tiny" --out "$SCRATCH/rr" >/dev/null
touch "$SCRATCH/rr/stale"
expect_status 0 "re-render" -- "$CCL_HARNESS" render -q "$tiny" --out "$SCRATCH/rr"
[ ! -e "$SCRATCH/rr/stale" ] && pass || fail "stale file survived a re-render"
expect_status 0 "--dry-run" -- "$CCL_HARNESS" render "$tiny" --dry-run --out "$SCRATCH/dry"
[ ! -e "$SCRATCH/dry" ] && pass || fail "--dry-run wrote files"

expect_status 0 "--json" -- "$CCL_HARNESS" validate --json "$tiny"
if /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); assert d[0]["status"] in ("ok","warning")' <<<"$OUT"; then pass; else fail "--json output: $OUT"; fi
expect_status 0 "profiles validate" -- "$CCL_HARNESS" validate --profile clusters/*.yaml

finish
