#!/bin/bash
# The TPU v6e executor. gcloud cannot run here, so this suite uses a recorded-command test double
# (fixtures/gcloud) and checks the exact sequence of gcloud calls the rendered lifecycle makes:
# create the queued resource, wait for ACTIVE, prepare and run on every worker, copy traces back,
# and delete the resource unless --keep; --dry-run lists the same commands and what bills. The workers really run remote.sh (the gcloud
# double's VMs are scratch directories), with the docker and MaxText doubles
# (tests/doubles/tools/docker, tests/doubles/maxtext); framework_tpu.sh covers them in depth.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
bin="$SCRATCH/bin"
mkdir -p "$bin"
cp "$(dirname "$0")/fixtures/gcloud" "$bin/gcloud"
ln -s "$CCL_SOURCE_DIR/tests/doubles/tools/docker" "$bin/docker"
export PATH="$bin:$PATH" GCLOUD_LOG="$SCRATCH/gcloud.log" GCLOUD_STATE="$SCRATCH/tpu-vms"
results="$SCRATCH/results"
card=workloads/deepseek-v2-16b-maxtext-tpu-v6e/deepseek-v2-16b-maxtext-tpu-v6e.yaml
name=ccl-deepseek-v2-16b-maxtext-tpu-v6e
where="--project my-gcp-project --zone us-east5-b"
# run pins launch.source before anything else, and the card's MaxText is on GitHub: a local
# stand-in repository (the MaxText double) keeps this suite off the network.
src="$SCRATCH/maxtext"
mkdir -p "$src/tests/doubles" "$src/docs"
cp -r tests/doubles/maxtext/. "$src/"
cp -r tests/doubles/lib "$src/tests/doubles/lib"
cp -r docs/contracts "$src/docs/contracts"
git init --quiet -b main "$src"
git -C "$src" add -A
git -C "$src" -c user.name=Test -c user.email=test@example.invalid commit --quiet -m stand-in
pin=(--set "launch.source.repo=$src" --set launch.source.ref=main --git-cache "$SCRATCH/git-cache")

expect_status 0 "TPU run with --teardown" -- "$CCL_HARNESS" run "$card" "${pin[@]}" --results "$results" --teardown
run=$(ls -d "$results"/*/ | head -n 1)
run=${run%/}
rendered="$run/rendered"
cat >"$SCRATCH/expected.log" <<EOT
compute tpus queued-resources describe $name-qr $where --format=value\\(state.state\\)
compute tpus queued-resources create $name-qr --node-id $name $where --accelerator-type v6e-8 --runtime-version v2-alpha-tpuv6e
compute tpus queued-resources describe $name-qr $where --format=value\\(state.state\\)
compute tpus tpu-vm ssh $name $where --worker=all --quiet --command sudo\\ rm\\ -rf\\ ccl-run/$name\\ \\&\\&\\ mkdir\\ -p\\ ccl-run/$name
compute tpus tpu-vm scp $rendered/remote.sh $rendered/env.sh $rendered/ccl_preflight.py $rendered/Containerfile $name:ccl-run/$name/ $where --worker=all --quiet
compute tpus tpu-vm ssh $name $where --worker=all --quiet --command bash\\ ccl-run/$name/remote.sh
compute tpus tpu-vm scp --recurse $name:ccl-run/$name/traces $rendered/ $where --worker=all --quiet
compute tpus tpu-vm scp --recurse $name:ccl-run/$name/logs $rendered/ $where --worker=all --quiet
compute tpus queued-resources delete $name-qr $where --force --quiet
EOT
if diff "$SCRATCH/expected.log" "$GCLOUD_LOG" >"$SCRATCH/argv.diff"; then pass; else fail "gcloud argv sequence:"$'\n'"$(cat "$SCRATCH/argv.diff")"; fi
# The one worker of a v6e-8 names its trace after its host (t1v-n-<8 hex>-w-0, as the gcloud double names it).
host="t1v-n-$(printf '%s' "$name" | sha256sum | cut -c1-8)-w-0"
/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); h=sys.argv[2]; assert r["state"] == "completed", r; assert sorted(r["traces"]) == [h + ".trace.json.gz", h + ".xplane.pb"], r["traces"]' \
    "$run/run.json" "$host" && pass || fail "TPU run record: $(cat "$run/run.json")"

# The slice is deleted by default (issue 18: a slice left up bills): no flag, a delete call.
rm -f "$GCLOUD_LOG"
expect_status 0 "TPU run, default teardown" -- "$CCL_HARNESS" run "$card" "${pin[@]}" --results "$results"
grep -q "queued-resources delete $name-qr" "$GCLOUD_LOG" && pass || fail "not deleted by default"
# A CCL_KEEP_TPU left in the environment does not decide for the run.
rm -f "$GCLOUD_LOG"
expect_status 0 "TPU run, default teardown, CCL_KEEP_TPU=1 in the environment" -- env CCL_KEEP_TPU=1 "$CCL_HARNESS" run "$card" "${pin[@]}" \
    --results "$results"
grep -q "queued-resources delete $name-qr" "$GCLOUD_LOG" && pass || fail "the environment's CCL_KEEP_TPU kept the slice"

# --keep keeps the slice (and the next run reuses it): no delete call.
rm -f "$GCLOUD_LOG"
expect_status 0 "TPU run keeping the slice" -- "$CCL_HARNESS" run "$card" "${pin[@]}" --results "$results" --keep
grep -q "queued-resources delete" "$GCLOUD_LOG" && fail "deleted with --keep" || pass
expect_output "kept slice is named" "CCL_KEEP_TPU=1: keeping $name-qr"

# --dry-run prints every gcloud command the rendered script would run, in order, and what bills;
# nothing reaches gcloud (the double's log stays empty) and no run directory is made.
rm -f "$GCLOUD_LOG"
before=$(ls "$results" | wc -l)
expect_status 0 "TPU dry run" -- "$CCL_HARNESS" run "$card" "${pin[@]}" --results "$results" --dry-run
[ ! -e "$GCLOUD_LOG" ] && pass || fail "the dry run called gcloud: $(cat "$GCLOUD_LOG")"
[ "$(ls "$results" | wc -l)" = "$before" ] && pass || fail "the dry run made a run directory"
shown="$(cd "$results" && pwd)/<run-id>/rendered"
sed -e "s|^|gcloud |" -e "s|$rendered|$shown|g" "$SCRATCH/expected.log" >"$SCRATCH/expected-dry.txt"
sed -n 's/^  \(gcloud .*\)$/\1/p' <<<"$OUT" >"$SCRATCH/dry.txt"
if diff "$SCRATCH/expected-dry.txt" "$SCRATCH/dry.txt" >"$SCRATCH/dry.diff"; then pass; else fail "dry-run commands:"$'\n'"$(cat "$SCRATCH/dry.diff")"; fi
expect_output "it says what bills" "bills: a TPU v6e-8 slice (8 chip(s) on 1 host(s)), on-demand, in zone us-east5-b of project my-gcp-project"
expect_output "it says the slice is deleted" "this run deletes it when it ends"
expect_status 0 "TPU dry run with --keep" -- "$CCL_HARNESS" run "$card" "${pin[@]}" --results "$results" --dry-run --keep
grep -q "queued-resources delete" <<<"$OUT" && fail "--keep dry run shows a delete" || pass
expect_output "it says the slice stays up" "this run leaves it up, and billing"
OUT=$("$CCL_HARNESS" run "$card" "${pin[@]}" --results "$results" --dry-run --json 2>/dev/null) && pass || fail "TPU dry run, --json"
/usr/bin/python3 -c 'import json,sys; p=json.loads(sys.argv[1])["preview"]; assert len(p["commands"]) == 9 and p["billing"].startswith("bills:") and p["commands_problem"] is None, p' \
    "$OUT" && pass || fail "--json preview: $OUT"

# A failure on the workers fails the run, and the resource it reused is still cleaned up on request.
rm -f "$GCLOUD_LOG"
expect_status 1 "workers fail" -- env GCLOUD_SSH_STATUS=7 "$CCL_HARNESS" run "$card" "${pin[@]}" --results "$results" --teardown
expect_output "failure reported" "tpu ended with exit"
grep -q "queued-resources delete" "$GCLOUD_LOG" && pass || fail "no delete after a failure with --teardown"

finish
