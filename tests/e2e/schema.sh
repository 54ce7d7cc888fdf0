#!/bin/bash
# The JSON Schema (`ccl-harness schema`) agrees with `validate`, and unknown --set / --vary paths
# are errors. The schema side runs python3-jsonschema over YAML 1.1 (tests/e2e/schema_check.py).
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
check=(/usr/bin/python3 tests/e2e/schema_check.py)
fixtures=tests/fixtures/cards
tiny=workloads/tiny-ddp/tiny-ddp.yaml
if ! /usr/bin/python3 -c 'import jsonschema, yaml' 2>/dev/null; then
    echo "schema.sh needs python3-jsonschema and python3-yaml (Debian packages; .ci/setup installs them)" >&2
    exit 1
fi

# --- the committed schemas are what the binary prints ----------------------------------------
for kind in card cluster; do
    expect_status 0 "schema $kind" -- "$CCL_HARNESS" schema "$kind"
    "$CCL_HARNESS" schema "$kind" >"$SCRATCH/$kind.schema.json"
    "$CCL_HARNESS" schema "$kind" >"$SCRATCH/$kind.again.json"
    if cmp -s "$SCRATCH/$kind.schema.json" "$SCRATCH/$kind.again.json"; then pass; else fail "schema $kind: two runs differ"; fi
    if cmp -s "$SCRATCH/$kind.schema.json" "docs/schema/$kind.schema.json"; then
        pass
    else
        fail "docs/schema/$kind.schema.json is stale; regenerate it with: build/ccl-harness schema $kind > docs/schema/$kind.schema.json"
    fi
done
expect_status 0 "schema defaults to card" -- "$CCL_HARNESS" schema
if [ "$OUT" = "$(cat "$SCRATCH/card.schema.json")" ]; then pass; else fail "schema without an argument is not the card schema"; fi
expect_status 2 "schema of an unknown kind" -- "$CCL_HARNESS" schema bundle
expect_output "unknown kind named" "schema bundle: expected card or cluster"
schema=docs/schema/card.schema.json

# --- every reference card: modeline first, valid to both ---------------------------------------
for card in workloads/*/*.yaml; do
    if [ "$(head -n 1 "$card")" = '# yaml-language-server: $schema=../../docs/schema/card.schema.json' ]; then
        pass
    else
        fail "$card: the first line is not the yaml-language-server modeline"
    fi
    expect_status 0 "$card validates" -- "$CCL_HARNESS" validate -q "$card"
done
expect_status 0 "schema check runs" -- "${check[@]}" check "$schema" workloads/*/*.yaml
while IFS= read -r line; do
    case "$line" in *": ok") pass ;; *) fail "reference card rejected by the schema: $line" ;; esac
done <<<"$OUT"
expect_status 0 "profiles validate" -- "$CCL_HARNESS" validate -q --profile clusters/*.yaml
expect_status 0 "profile schema check runs" -- "${check[@]}" check docs/schema/cluster.schema.json clusters/*.yaml
while IFS= read -r line; do
    case "$line" in *": ok") pass ;; *) fail "cluster profile rejected by the schema: $line" ;; esac
done <<<"$OUT"

# --- bad cards: rejected by both, validate with the message the fixture names -------------------
count=0
for card in "$fixtures"/bad-*.yaml; do
    count=$((count + 1))
    want=$(sed -n 's/^# expect: //p' "$card")
    expect_status 2 "$card rejected by validate" -- "$CCL_HARNESS" validate -q "$card"
    expect_output "$card: validate's message" "$want"
    expect_status 0 "schema check runs" -- "${check[@]}" check "$schema" "$card"
    expect_output "$card rejected by the schema" "$card: invalid:"
done
if [ "$count" -ge 15 ]; then pass; else fail "only $count bad-card fixtures found in $fixtures"; fi
expect_status 0 "odd but valid card" -- "$CCL_HARNESS" validate "$fixtures/odd-but-valid.yaml"
expect_output "odd card warns" "unknown key, ignored"
expect_status 0 "schema check runs" -- "${check[@]}" check "$schema" "$fixtures/odd-but-valid.yaml"
expect_output "odd card accepted by the schema" "odd-but-valid.yaml: ok"

# --- the CCL-Bench corpus: no errors <=> schema-valid --------------------------------------------
mapfile -t corpus < <(find "$CORPUS" -name '*.yaml' | LC_ALL=C sort)
if [ "${#corpus[@]}" -ge 200 ]; then pass; else fail "corpus: ${#corpus[@]} cards under $CORPUS, expected about 213"; fi
"$CCL_HARNESS" validate --json "${corpus[@]}" >"$SCRATCH/corpus.json" 2>/dev/null || true
expect_status 0 "corpus: schema and validate agree" -- "${check[@]}" corpus "$schema" "$SCRATCH/corpus.json" "$CORPUS" "${corpus[@]}"
echo "$OUT" | head -n 1

# --- unknown --set / --vary paths ----------------------------------------------------------------
out="$SCRATCH/render"
expect_status 2 "render: unknown --set path" -- "$CCL_HARNESS" render "$tiny" --set launch.stepz=3 --out "$out"
expect_output "render: message" 'ccl-harness: error: --set launch.stepz=3: unknown field "launch.stepz"; did you mean "launch.steps"?'
if [ ! -e "$out" ]; then pass; else fail "render with an unknown --set path wrote $out"; fi
expect_status 2 "render: unknown section" -- "$CCL_HARNESS" render "$tiny" --set lauch.steps=3 --dry-run
expect_output "render: repaired path suggested" 'unknown field "lauch.steps"; did you mean "launch.steps"?'
expect_status 2 "render: no suggestion lists the fields" -- "$CCL_HARNESS" render "$tiny" --set launch.zzzzzzzz=1 --dry-run
expect_output "render: fields listed" '"launch" has: cluster, account'
expect_status 2 "render: below a value" -- "$CCL_HARNESS" render "$tiny" --set launch.steps.count=3 --dry-run
expect_output "render: below a value named" '"launch.steps" holds a value, not fields'
expect_status 0 "render: known path" -- "$CCL_HARNESS" render -q "$tiny" --set launch.steps=14 --dry-run
expect_status 0 "render: env block key" -- "$CCL_HARNESS" render -q "$tiny" --set launch.env.NCCL_DEBUG=INFO --dry-run
expect_status 0 "render: anything below collection_notes" -- "$CCL_HARNESS" render -q "$tiny" --set collection_notes.who.when=now --dry-run
expect_status 0 "render: --allow-new" -- "$CCL_HARNESS" render -q "$tiny" --set launch.stepz=3 --allow-new --dry-run
expect_status 2 "render: wrong type still reported with its origin" -- "$CCL_HARNESS" render "$tiny" --set launch.steps=many --dry-run
expect_output "render: origin" '--set launch.steps=many: launch.steps: expected a positive integer, got "many"'

expect_status 2 "validate: unknown --set path" -- "$CCL_HARNESS" validate "$tiny" --set workload.data.batchsize=8
expect_output "validate: message" '--set workload.data.batchsize=8: unknown field "workload.data.batchsize"; did you mean "workload.data.batch_size"?'
expect_status 0 "validate: --allow-new" -- "$CCL_HARNESS" validate -q "$tiny" --set workload.data.batchsize=8 --allow-new

results="$SCRATCH/results"
expect_status 2 "run --dry-run: unknown --set path" -- "$CCL_HARNESS" run "$tiny" --dry-run --set launch.stepz=3 --results "$results"
expect_output "run: message" 'unknown field "launch.stepz"; did you mean "launch.steps"?'
expect_status 0 "run --dry-run: known path" -- "$CCL_HARNESS" run "$tiny" --dry-run --set launch.steps=14 --results "$results"
expect_status 0 "run --dry-run: --allow-new" -- "$CCL_HARNESS" run "$tiny" --dry-run --set launch.stepz=3 --allow-new --results "$results"

results="$SCRATCH/sweep-results"
expect_status 2 "sweep: misspelt --vary fails before any point" -- "$CCL_HARNESS" sweep "$tiny" --vary workload.data.batchsize=8,16 --results "$results"
expect_output "sweep: message" '--vary workload.data.batchsize=8,16: unknown field "workload.data.batchsize"; did you mean "workload.data.batch_size"?'
if [ ! -e "$results" ] || [ -z "$(ls -A "$results")" ]; then pass; else fail "sweep with a bad --vary wrote into $results"; fi
expect_status 0 "sweep --dry-run: known path" -- "$CCL_HARNESS" sweep "$tiny" --vary workload.data.batch_size=8,16 --dry-run --results "$results"
expect_status 0 "sweep --dry-run: env key" -- "$CCL_HARNESS" sweep "$tiny" --vary launch.env.NCCL_ALGO=Ring,Tree --dry-run --results "$results"
expect_status 0 "sweep --dry-run: --allow-new" -- "$CCL_HARNESS" sweep "$tiny" --vary launch.stepz=3,4 --allow-new --dry-run --results "$results"

finish
