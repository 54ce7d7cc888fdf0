#!/bin/bash
# The four TPU v6e reference cards run end to end through the rendered gcloud lifecycle, with
# test doubles for everything that cannot run here:
#   gcloud   tests/e2e/fixtures/gcloud: a queued resource whose VMs are scratch directories, one
#            per worker of the accelerator type (v6e-8: 1 VM x 8 chips, v6e-16: 4 VMs x 4 chips,
#            v6e-4: 1 VM), `tpu-vm ssh --worker=all` running the command on each at once;
#   docker   tests/doubles/tools/docker: builds the rendered Containerfile into an image directory
#            (tests/doubles/images/maxtext or vllm-tpu) and runs `remote.sh` "in" it;
#   MaxText  tests/doubles/maxtext (docs/contracts/maxtext-tpu-recipes-v0.1.4.yaml), a local git
#            repository tagged tpu-recipes-v0.1.4 that the image build checks out;
#   vLLM     tests/doubles/images/vllm-tpu/bin/vllm (docs/contracts/tpu-inference-v0.27.0.yaml);
#   torchprime  tests/doubles/torchprime (docs/contracts/torchxla-ea8f14b6....yaml), PyTorch/XLA's
#            trainer, in a local git repository tagged torchprime-pin.
# The cards run at their own sizes (the doubles need no chips). Each run must end in a bundle that
# verify accepts, holding every host's trace the contract says is written: every host for MaxText
# (upload_all_profiler_results=true) and torchprime, rank 0's host for vLLM.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
bin="$SCRATCH/bin"
mkdir -p "$bin"
cp tests/e2e/fixtures/gcloud "$bin/gcloud"
ln -s "$CCL_SOURCE_DIR/tests/doubles/tools/docker" "$bin/docker"
export PATH="$bin:$PATH" GCLOUD_LOG="$SCRATCH/gcloud.log" GCLOUD_STATE="$SCRATCH/tpu-vms"
results="$SCRATCH/results"
where=(--git-cache "$SCRATCH/git-cache")

# tag_repo DIR REF [SOURCE]: a git repository at DIR holding SOURCE (a double's tree, with the
# shared double library and the contracts where it looks for them), tagged REF.
tag_repo() {
    local dir=$1 ref=$2 source=${3:-}
    mkdir -p "$dir/tests/doubles" "$dir/docs"
    if [ -n "$source" ]; then
        cp -r "$source/." "$dir/"
    fi
    cp -r tests/doubles/lib "$dir/tests/doubles/lib"
    cp -r docs/contracts "$dir/docs/contracts"
    git -C "$dir" init --quiet
    git -C "$dir" add -A
    git -C "$dir" -c user.name=t -c user.email=t@t commit --quiet -m "double at $ref"
    git -C "$dir" tag "$ref"
}
maxtext="$SCRATCH/maxtext"
tag_repo "$maxtext" tpu-recipes-v0.1.4 tests/doubles/maxtext
tpu_inference="$SCRATCH/tpu-inference"
tag_repo "$tpu_inference" v0.27.0
# torchprime is pinned by commit, which a local repository cannot have: the runs name the tag.
torchprime="$SCRATCH/torchprime"
tag_repo "$torchprime" torchprime-pin tests/doubles/torchprime
torchxla=(--set "launch.source.repo=$torchprime" --set launch.source.ref=torchprime-pin)

# check_bundle RUN HOSTS STEPS: the run completed, its bundle verifies, and it holds exactly HOSTS
# hosts' traces (<host>.xplane.pb and its <host>.trace.json.gz export), each with STEPS steps.
check_bundle() {
    local run=${1%/} hosts=$2 steps=$3 what
    what=$(basename "$run")
    [ "$(run_json "$run" 'r["state"]')" = completed ] && pass || fail "$what: state $(run_json "$run" 'r["state"]'): $(tail -20 "$run"/logs/workers.log 2>/dev/null)"
    expect_status 0 "$what: the bundle verifies" -- "$CCL_HARNESS" verify --json "$run.tar.zst"
    /usr/bin/python3 - "$run" "$hosts" "$steps" "$OUT" <<'EOF' && pass || fail "$what: traces: $(ls "$run/traces")"
import json, os, re, sys
run, hosts, steps, report = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
names = sorted(os.listdir(os.path.join(run, "traces")))
xplanes = [n for n in names if re.fullmatch(r"t1v-n-[0-9a-f]{8}-w-\d+\.xplane\.pb", n)]
exports = [n for n in names if n.endswith(".trace.json.gz")]
assert len(xplanes) == hosts, (names, hosts)
assert sorted(n[: -len(".xplane.pb")] for n in xplanes) == sorted(n[: -len(".trace.json.gz")] for n in exports), names
assert sorted(int(n.split("-w-")[1].split(".")[0]) for n in xplanes) == list(range(hosts)), names
start = report.find("{")
counted = {t["path"].rsplit("/", 1)[-1]: t["steps"] for t in json.loads(report[start:])["traces"] if "steps" in t}
for name in exports:
    assert counted.get(name) == steps, (name, counted)
EOF
}

# MaxText, DeepSeek-V2-16B on a v6e-8: one VM of 8 chips; steps 6..10 (1-based) traced.
card=workloads/deepseek-v2-16b-maxtext-tpu-v6e/deepseek-v2-16b-maxtext-tpu-v6e.yaml
expect_status 0 "deepseek-v2-16b on v6e-8" -- "$CCL_HARNESS" run "$card" --set "launch.source.repo=$maxtext" "${where[@]}" --results "$results" --teardown
run=$(latest_run)
check_bundle "$run" 1 5
# XLA collective volume is not read yet (issue 30); one VM's trace has no straggler.
expect_metrics "${run%/}.tar.zst" "collective_volume=no event carries collective arguments" "straggler=one rank"
grep -q "mesh {'ici_data_parallelism': 1, 'ici_fsdp_parallelism': 1, 'ici_tensor_parallelism': 2, 'ici_expert_parallelism': 4" "$run/logs/workers.log" &&
    pass || fail "deepseek: the double did not see the card's mesh: $(cat "$run/logs/workers.log")"
grep -q "queued-resources delete" "$GCLOUD_LOG" && pass || fail "deepseek: no teardown"

# MaxText, Llama-3.1-8B on a v6e-16: four VMs of 4 chips, each writing its own trace.
card=workloads/llama-3.1-8b-maxtext-tpu-v6e-16/llama-3.1-8b-maxtext-tpu-v6e-16.yaml
expect_status 0 "llama-3.1-8b on v6e-16" -- "$CCL_HARNESS" run "$card" --set "launch.source.repo=$maxtext" "${where[@]}" --results "$results" --teardown
run=$(latest_run)
check_bundle "$run" 4 5
expect_metrics "${run%/}.tar.zst" "collective_volume=no event carries collective arguments"
[ "$(grep -c "process [0-3] of 4, 16 chips" "$run/logs/workers.log")" = 4 ] && pass ||
    fail "llama: not four processes over 16 chips: $(cat "$run/logs/workers.log")"

# vLLM, Qwen3-4B on a v6e-4: rank 0 profiles the one batch after 2 warm-up batches (output 1: one step).
card=workloads/qwen3-4b-vllm-tpu-v6e/qwen3-4b-vllm-tpu-v6e.yaml
expect_status 0 "qwen3-4b vllm on v6e-4" -- "$CCL_HARNESS" run "$card" --set "launch.source.repo=$tpu_inference" "${where[@]}" --results "$results" --teardown
run=$(latest_run)
check_bundle "$run" 1 1
expect_metrics "${run%/}.tar.zst" "collective_volume=no event carries collective arguments" "straggler=one rank"
# Two passes (issue 26): the profiled one writes no JSON (latency.py returns first), the timed one does.
ls "$run"/logs/t1v-n-*-w-0.latency.json >/dev/null 2>&1 && pass || fail "vLLM TPU: the timed pass wrote no latency JSON: $(ls "$run/logs")"
# ...under the name mfu.py globs (*.latency.json), so mfu takes the timed batch, not a trace step.
expect_status 0 "vLLM TPU metrics" -- "$CCL_HARNESS" metrics "${run%/}.tar.zst"
expect_output "mfu from the timed pass's latency" "(avg_latency of t1v-n-"
grep -q "vllm bench latency .* --profile" "$run/logs/workers.log" && grep -q "vllm bench latency .* --num-iters" "$run/logs/workers.log" &&
    pass || fail "vLLM TPU: not a profiled and a timed pass: $(grep 'vllm bench latency' "$run/logs/workers.log")"

# PyTorch/XLA (torchprime's trainer), Llama-3.1-8B on a v6e-8: fsdp 2 x tensor 4, profile_start_step 3,
# profile_end_step 13: 0-based steps 4..13, ten StepMarkers in the host's trace.
card=workloads/llama-3.1-8b-torchxla-tpu/llama-3.1-8b-torchxla-tpu.yaml
expect_status 0 "llama-3.1-8b torchxla on v6e-8" -- "$CCL_HARNESS" run "$card" "${torchxla[@]}" "${where[@]}" --results "$results" --teardown
run=$(latest_run)
check_bundle "$run" 1 10
expect_metrics "${run%/}.tar.zst" "collective_volume=no event carries collective arguments" "straggler=one rank"
grep -q "mesh {'data': 1, 'fsdp': 2, 'tensor': 4, 'expert': 1, 'context': 1}, model llama-3.1-8b, sharding llama-fsdp-tp, batch 4, 20 steps" "$run/logs/workers.log" &&
    pass || fail "torchxla: the double did not see the card's mesh: $(cat "$run/logs/workers.log")"
grep -q "profile of steps 4..13" "$run/logs/workers.log" && pass || fail "torchxla: not the contributors' window: $(grep profile "$run/logs/workers.log")"

# Bad: a key torchprime's default.yaml lacks: the job's preflight stops it before torch_xla starts.
expect_status 1 "an unknown torchprime key fails the run" -- "$CCL_HARNESS" run "$card" "${torchxla[@]}" \
    --set 'launch.args=["no_such_key=1"]' "${where[@]}" --results "$results" --teardown
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = failed ] && pass || fail "unknown torchprime key: state $(run_json "$run" 'r["state"]')"
grep -rq "no_such_key is not a key of torchprime/torch_xla_models/configs/default.yaml" "$run/logs" &&
    pass || fail "unknown torchprime key: the logs lack the preflight's refusal: $(ls -R "$run/logs")"
# Bad: a dotted key the preflight cannot see: Hydra refuses it as the struct config does.
expect_status 1 "an unknown Hydra key fails the run" -- "$CCL_HARNESS" run "$card" "${torchxla[@]}" \
    --set 'launch.args=["task.no_such_key=1"]' "${where[@]}" --results "$results" --teardown
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = failed ] && pass || fail "unknown Hydra key: state $(run_json "$run" 'r["state"]')"
grep -rq "Could not override 'task.no_such_key'" "$run/logs" && pass || fail "unknown Hydra key: no Hydra refusal in the logs"
# What torchprime cannot do is refused before anything runs (harness/plan/frameworks/torchxla.cpp).
expect_status 2 "torchxla refuses pipeline parallelism" -- "$CCL_HARNESS" validate --strict "$card" \
    --set Model-executor.model_plan_parallelization.pp=2 --set Model-executor.model_plan_parallelization.dp_shard=1
expect_output "naming the field and torchprime's mesh" "model_plan_parallelization.pp: pp 2 is not supported for torchxla"
expect_status 2 "torchxla refuses a dataset torchprime does not render" -- "$CCL_HARNESS" validate --strict "$card" --set workload.data.dataset=c4
expect_output "at the dataset field" "workload.data.dataset: c4 is not supported for torchxla"
expect_status 2 "torchxla refuses too few steps for its window" -- "$CCL_HARNESS" validate --strict "$card" --set launch.steps=15
expect_output "with torchprime's clamp" "torchprime stops the trace no later than step max_steps-5"

# Bad: a key MaxText's pyconfig does not have, through launch.args: the double refuses it as
# pyconfig does, the workers fail, the run fails and says so.
card=workloads/deepseek-v2-16b-maxtext-tpu-v6e/deepseek-v2-16b-maxtext-tpu-v6e.yaml
expect_status 1 "an unknown MaxText key fails the run" -- "$CCL_HARNESS" run "$card" --set "launch.source.repo=$maxtext" \
    --set 'launch.args=["model_name=deepseek2-16b", "no_such_key=1"]' "${where[@]}" --results "$results" --teardown
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = failed ] && pass || fail "unknown key: state $(run_json "$run" 'r["state"]')"
# The job's preflight finds it in the image's base.yml before MaxText (and JAX) start.
grep -rq "no_such_key is not a key of MaxText/configs/base.yml" "$run/logs" &&
    pass || fail "unknown key: the logs lack the preflight's refusal: $(ls -R "$run/logs")"
grep -rq "Key no_such_key was passed at the command line" "$run/logs" && fail "unknown key: MaxText started" || pass
# A model MaxText does not have is refused before anything runs (plan, harness/plan/frameworks/maxtext.cpp).
expect_status 2 "an unknown MaxText model is refused" -- "$CCL_HARNESS" run "$card" --set "launch.source.repo=$maxtext" \
    --set 'launch.args=["model_name=deepseek2-17b"]' "${where[@]}" --results "$results" --teardown
expect_output "naming pyconfig's rule" "is not a model of maxtext at tpu-recipes-v0.1.4"

# Bad: a vLLM option the contract does not list: argparse refuses it, the run fails.
card=workloads/qwen3-4b-vllm-tpu-v6e/qwen3-4b-vllm-tpu-v6e.yaml
expect_status 1 "an unknown vLLM option fails the run" -- "$CCL_HARNESS" run "$card" --set "launch.source.repo=$tpu_inference" \
    --set 'launch.args=["--no-such-option"]' "${where[@]}" --results "$results" --teardown
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = failed ] && pass || fail "unknown vLLM option: state $(run_json "$run" 'r["state"]')"
grep -rq -- "--no-such-option is not an option" "$run/logs" && pass || fail "unknown vLLM option: no preflight refusal in the logs"
grep -rq "unrecognized arguments: --no-such-option" "$run/logs" && fail "unknown vLLM option: vLLM started" || pass

# Bad: a slice size xpk and the Cloud TPU API do not have.
card=workloads/llama-3.1-8b-maxtext-tpu-v6e-16/llama-3.1-8b-maxtext-tpu-v6e-16.yaml
expect_status 2 "v6e-12 is refused" -- "$CCL_HARNESS" validate --strict "$card" --set workload.hardware.xpu_spec.total_count=12
expect_output "the slice sizes are named" "v6e-16"

# The doubles enforce what the real platform does.
work="$SCRATCH/direct"
mkdir -p "$work/ctx"
printf 'FROM docker.io/library/python:3.12\n' >"$work/Containerfile"
expect_status 125 "docker refuses an option it does not have" -- docker run --no-such-flag img true
expect_output "as docker's CLI does" "unknown flag: --no-such-flag"
expect_status 1 "docker refuses a missing Containerfile" -- docker build --tag t --file "$work/Containerfile.bad" "$work/ctx"
printf 'FROM docker.io/library/ubuntu:22.04\n' >"$work/Containerfile.bad"
expect_status 1 "docker refuses a base the images do not have" -- docker build --tag t --file "$work/Containerfile.bad" "$work/ctx"
expect_status 1 "docker refuses an upper-case tag" -- docker build --tag Bad:tag --file "$work/Containerfile" "$work/ctx"
expect_output "repository names are lower case" "must be lowercase"
printf 'echo inside\n' >"$work/ctx/script.sh"
expect_status 0 "docker runs a script from a volume" -- docker run --rm -v "$work/ctx:$work/ctx" --entrypoint bash docker.io/library/python:3.12 "$work/ctx/script.sh"
expect_status 127 "docker cannot see a host path that is not mounted" -- docker run --rm --entrypoint bash docker.io/library/python:3.12 "$work/ctx/script.sh"
printf '{"worker_id": 0, "worker_count": 1, "chips_per_host": 8, "accelerator_type": "v6e-8"}\n' >"$work/metadata.json"
mt() { # mt ENV... -- KEY=VALUE...: the MaxText double, from its checkout, as on one v6e-8 VM
    local env=()
    while [ "$1" != -- ]; do env+=("$1"); shift; done
    shift
    (cd "$maxtext" && env "${env[@]}" /usr/bin/python3 -m MaxText.train MaxText/configs/base.yml model_name=llama3.1-8b \
        dataset_type=synthetic "$@")
}
expect_status 0 "the MaxText double runs on a v6e-8" -- mt CCL_TPU_CHIPS=8 "CCL_TPU_METADATA=$work/metadata.json" -- ici_fsdp_parallelism=8
expect_status 1 "without the chips (no --privileged) JAX has no TPU" -- mt "CCL_TPU_METADATA=$work/metadata.json" --
expect_output "as JAX says" "Unable to initialize backend 'tpu'"
expect_status 1 "an unknown model" -- mt CCL_TPU_CHIPS=8 "CCL_TPU_METADATA=$work/metadata.json" -- model_name=llama9
expect_output "as validate_model_name says" "Invalid model name llama9"
expect_status 1 "ICI axes that do not multiply to the chips" -- mt CCL_TPU_CHIPS=8 "CCL_TPU_METADATA=$work/metadata.json" -- ici_fsdp_parallelism=4
expect_output "with MaxText's message" "Number of devices 8 does not match the product of the ICI parallelism 4"
expect_status 1 "profiling past the last step" -- mt CCL_TPU_CHIPS=8 "CCL_TPU_METADATA=$work/metadata.json" -- steps=5 profiler=xplane skip_first_n_steps_for_profiler=5
expect_output "as profiler.py refuses it" "initial profiling step set past training final step"
# Host 1 of 2 without upload_all_profiler_results writes no profile: MaxText keeps host 0's only.
printf '{"worker_id": 1, "worker_count": 2, "chips_per_host": 4, "accelerator_type": "v6e-8"}\n' >"$work/metadata1.json"
expect_status 0 "host 1 without upload_all_profiler_results" -- mt CCL_TPU_CHIPS=4 "CCL_TPU_METADATA=$work/metadata1.json" CCL_GCLOUD_HOSTNAME=h1 -- \
    ici_fsdp_parallelism=8 profiler=xplane steps=10 "base_output_directory=$work/out1" run_name=r
[ -z "$(find "$work/out1" -name '*.xplane.pb' 2>/dev/null)" ] && pass || fail "host 1 wrote a profile without upload_all_profiler_results"
# The torchprime double: Hydra's refusals and torchprime's asserts, on one v6e-8 VM.
tp() { # tp ENV... -- OVERRIDE...: the torchprime double, from its checkout
    local env=()
    while [ "$1" != -- ]; do env+=("$1"); shift; done
    shift
    (cd "$torchprime" && env PJRT_DEVICE=TPU "${env[@]}" /usr/bin/python3 torchprime/torch_xla_models/train.py "$@")
}
expect_status 0 "the torchprime double runs on a v6e-8" -- tp CCL_TPU_CHIPS=8 "CCL_TPU_METADATA=$work/metadata.json" -- ici_mesh.fsdp=8 profile_start_step=-1
expect_status 1 "a model config torchprime lacks" -- tp CCL_TPU_CHIPS=8 "CCL_TPU_METADATA=$work/metadata.json" -- model=llama9 ici_mesh.fsdp=8
expect_output "as Hydra says" "Could not find 'model/llama9'"
expect_status 1 "a mesh that does not use every device" -- tp CCL_TPU_CHIPS=8 "CCL_TPU_METADATA=$work/metadata.json" -- ici_mesh.fsdp=4
expect_output "as topology.py asserts" "Mesh is not using all the available devices. The environment has 8 devices"
expect_status 1 "a precision torchprime does not train in" -- tp CCL_TPU_CHIPS=8 "CCL_TPU_METADATA=$work/metadata.json" -- ici_mesh.fsdp=8 torch_dtype=float32
expect_output "as train.py asserts" "Currently only bfloat16 is supported"
expect_status 1 "without the chips torch_xla has no TPU" -- tp "CCL_TPU_METADATA=$work/metadata.json" -- ici_mesh.fsdp=8
expect_status 0 "a start past max_steps-2 turns profiling off" -- tp CCL_TPU_CHIPS=8 "CCL_TPU_METADATA=$work/metadata.json" -- \
    ici_mesh.fsdp=8 task.max_steps=5 profile_start_step=4 "profile_dir=$work/tp-off"
[ -z "$(find "$work/tp-off" -name '*.xplane.pb' 2>/dev/null)" ] && pass || fail "the torchprime double profiled past its last step"
# vLLM's TPU double: the contract's options only, and only on the chips it has.
expect_status 2 "vllm refuses an option the contract lacks" -- env CCL_TPU_CHIPS=4 tests/doubles/images/vllm-tpu/bin/vllm bench latency --model m --no-such-option
expect_output "as argparse does" "unrecognized arguments: --no-such-option"
expect_status 1 "vllm on more chips than the VM has" -- env CCL_TPU_CHIPS=4 tests/doubles/images/vllm-tpu/bin/vllm bench latency --model m --tensor-parallel-size 8
# The gcloud double: a worker's failure is the ssh call's, and an accelerator type the API lacks is refused.
expect_status 1 "gcloud refuses v6e-12" -- env GCLOUD_LOG="$work/g.log" GCLOUD_STATE="$work/vms" gcloud compute tpus queued-resources create q --node-id n --accelerator-type v6e-12
env GCLOUD_LOG="$work/g.log" GCLOUD_STATE="$work/vms" gcloud compute tpus queued-resources create q --node-id n --accelerator-type v6e-16
expect_status 3 "one failing worker fails tpu-vm ssh" -- env GCLOUD_LOG="$work/g.log" GCLOUD_STATE="$work/vms" \
    gcloud compute tpus tpu-vm ssh n --worker=all --command 'if [ "$TPU_WORKER_ID" = 2 ]; then exit 3; fi; hostname'
[ "$(grep -c '^t1v-n-[0-9a-f]*-w-[0-3]$' <<<"$OUT")" = 3 ] && pass || fail "the other three workers ran: $OUT"
finish
