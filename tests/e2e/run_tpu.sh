#!/bin/bash
# The TPU v6e executor. gcloud cannot run here, so this suite uses a recorded-command test double
# (fixtures/gcloud) and checks the exact sequence of gcloud calls the rendered lifecycle makes:
# create the queued resource, wait for ACTIVE, prepare and run on every worker, copy traces back,
# and delete the resource only with --teardown. The workers really run remote.sh (the gcloud
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
compute tpus tpu-vm scp $rendered/remote.sh $rendered/env.sh $rendered/Containerfile $name:ccl-run/$name/ $where --worker=all --quiet
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

# Without --teardown the slice is kept (and reused by the next run): no delete call.
rm -f "$GCLOUD_LOG"
expect_status 0 "TPU run keeping the slice" -- "$CCL_HARNESS" run "$card" "${pin[@]}" --results "$results"
grep -q "queued-resources delete" "$GCLOUD_LOG" && fail "deleted without --teardown" || pass
expect_output "kept slice is named" "CCL_KEEP_TPU=1: keeping $name-qr"

# A failure on the workers fails the run, and the resource it reused is still cleaned up on request.
rm -f "$GCLOUD_LOG"
expect_status 1 "workers fail" -- env GCLOUD_SSH_STATUS=7 "$CCL_HARNESS" run "$card" "${pin[@]}" --results "$results" --teardown
expect_output "failure reported" "tpu ended with exit"
grep -q "queued-resources delete" "$GCLOUD_LOG" && pass || fail "no delete after a failure with --teardown"

finish
