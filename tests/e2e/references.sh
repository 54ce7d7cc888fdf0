#!/bin/bash
# Holding runs to account: `compare --against references.yaml` passes a tiny-ddp run that meets
# its workload's references and exits 1 on a regression, a missing metric or a file that names no
# run; a bad references.yaml is one error at its line, before any bundle is read; `reproduce`
# prints the reproduction's numbers against the bundle's and its noise verdict, and
# --fail-outside-noise turns a reproduction outside the noise into exit 1.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"
export TMPDIR="$SCRATCH/tmp"
mkdir -p "$TMPDIR"

expect_status 0 "tiny-ddp runs and packs" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
bundle=$(sed -n 's/^  bundle: \(.*\.tar\.zst\).*/\1/p' <<<"$OUT" | tail -n 1)
[ -f "$bundle" ] && pass || fail "no bundle in: $OUT"

refs="$SCRATCH/references.yaml"
cat >"$refs" <<'YAML'
# What tiny-ddp on this machine should give: loose, a loaded CI box is slow (0.1 s a step seen).
references:
  - workload: tiny-ddp
    where: {workload.data.batch_size: 8}
    metrics:
      avg_step_time: {value: 5, tolerance: 100%}
      compute_comm_overlap: {min: 0, max: 100}
YAML
expect_status 0 "a run that meets its references passes" -- "$CCL_HARNESS" compare "$bundle" --against "$refs"
expect_output "each check said" "within      $(basename "$bundle" .tar.zst)  avg_step_time = "
expect_output "the total" "passed: 2 checks"
expect_status 0 "--json carries them" -- "$CCL_HARNESS" compare "$results" --against "$refs" --json
expect_json_text() { /usr/bin/python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$OUT" "$1"; }
expect_eq "--json references" "(False, ['within', 'within'])" \
    "$(expect_json_text "j['references']['failed'], [c['verdict'] for c in j['references']['checks']]")"

# A regression (a step time no CPU reaches, an overlap bound), a missing metric, a file naming no run.
sed 's/value: 5, tolerance: 100%/value: 0.000001, tolerance: 10%/' "$refs" >"$SCRATCH/regression.yaml"
expect_status 1 "a regression exits 1" -- "$CCL_HARNESS" compare "$bundle" --against "$SCRATCH/regression.yaml"
expect_output "named, with how far" "regression  $(basename "$bundle" .tar.zst)  avg_step_time = "
expect_output "and the verdict" "FAILED: 1 of 2 checks"
printf 'references:\n  - workload: tiny-ddp\n    metrics:\n      mfu: {min: 1}\n' >"$SCRATCH/missing.yaml"
expect_status 1 "a metric the run cannot give exits 1" -- "$CCL_HARNESS" compare "$bundle" --against "$SCRATCH/missing.yaml"
expect_output "saying why" "missing     $(basename "$bundle" .tar.zst)  mfu = n/a"
sed 's/workload: tiny-ddp/workload: llama-*/' "$refs" >"$SCRATCH/other.yaml"
expect_status 1 "references that name no run exit 1" -- "$CCL_HARNESS" compare "$bundle" --against "$SCRATCH/other.yaml"
expect_output "saying so" "no run is named by any reference"
sed 's/batch_size: 8/batch_size: 32/' "$refs" >"$SCRATCH/where.yaml"
expect_status 1 "where: card values the run lacks leave it unmatched" -- "$CCL_HARNESS" compare "$bundle" --against "$SCRATCH/where.yaml"

# A references.yaml it cannot read: one error at its line, exit 2, nothing unpacked.
printf 'references:\n  - workload: tiny-ddp\n    metrics:\n      avg_step_tim: {value: 1, tolerance: 5%%}\n' >"$SCRATCH/typo.yaml"
expect_status 2 "an unknown metric" -- "$CCL_HARNESS" compare "$bundle" --against "$SCRATCH/typo.yaml"
expect_output "at its line, with the fix" "typo.yaml:4:7: references[0].metrics.avg_step_tim: not a metric"
expect_output "did you mean" 'did you mean "avg_step_time"?'
printf 'references:\n  - workload: tiny-ddp\n    metrics:\n      mfu: {value: 1}\n' >"$SCRATCH/notol.yaml"
expect_status 2 "a value without a tolerance" -- "$CCL_HARNESS" compare "$bundle" --against "$SCRATCH/notol.yaml"
expect_output "says what to add" "a value needs a tolerance"
expect_status 2 "no such file" -- "$CCL_HARNESS" compare "$bundle" --against "$SCRATCH/nope.yaml"
expect_status 2 "compare without --against still needs two" -- "$CCL_HARNESS" compare "$bundle"
expect_output "saying so" "compare needs two or more runs or bundles, got 1"
[ -z "$(ls -A "$TMPDIR")" ] && pass || fail "scratch left in \$TMPDIR: $(ls -A "$TMPDIR")"

# reproduce: the new run's numbers against the bundle's, with the verdict.
rc=0
"$CCL_HARNESS" reproduce "$bundle" --results "$SCRATCH/again" --json >"$SCRATCH/reproduce.json" 2>"$SCRATCH/reproduce.err" || rc=$?
expect_eq "reproduce --json exits 0" 0 "$rc"
OUT=$(cat "$SCRATCH/reproduce.json")
expect_eq "a verdict with both step times" "(True, True, True)" \
    "$(expect_json_text "j['verdict']['judged'], j['verdict']['bundle_step_time'] > 0, 'avg_step_time' in j['verdict']['metrics']")"
within=$(expect_json_text "j['verdict']['within_noise']")
expect_status 0 "in text" -- "$CCL_HARNESS" reproduce "$bundle" --results "$SCRATCH/again"
expect_output "the verdict line" "reproduced within noise: step time "
expect_output "the noise" "; noise ±"
expect_output "each metric against the bundle's" "avg_step_time              "
# --fail-outside-noise: its exit follows the verdict (either way, for a noisy CPU run).
rc=0
"$CCL_HARNESS" reproduce "$bundle" --results "$SCRATCH/again" --fail-outside-noise --json >"$SCRATCH/gate.json" 2>/dev/null || rc=$?
gate_within=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"]["within_noise"])' "$SCRATCH/gate.json")
if [ "$gate_within" = True ]; then expect_eq "within noise: exit 0" 0 "$rc"; else expect_eq "outside noise: exit 1" 1 "$rc"; fi
echo "references: the first reproduction was within noise: $within"
finish
