#!/bin/bash
# The two TorchTitan reference cards run end to end on the slurm-local test cluster with the
# TorchTitan v0.2.2 double (tests/doubles/torchtitan, checked against
# docs/contracts/torchtitan-v0.2.2.yaml) standing in for TorchTitan, the nsys double
# (tests/doubles/tools/nsys) for Nsight Systems, and the nvidia-pytorch image double
# (tests/doubles/images/nvidia-pytorch: python3, huggingface_hub, nsys) for the container.
# torchrun is the real one (/usr/bin/torchrun).
#
# Scale: the test cluster has ONE node with 4 fake GPUs, so each card runs on 1 node x 4 ranks:
# total_count 4, dp_shard 2 x tp 2 (global batch 16 still divides by dp 2), no container runtime
# (the node itself; the image double is on PATH/PYTHONPATH). Skips (125) when slurm-local is down.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
cluster=clusters/slurm-local/cluster.sh
if ! bash "$cluster" status >/dev/null 2>&1; then
    echo "skip: the slurm-local test cluster is not running (bash $cluster start)"
    exit 125
fi
eval "$(bash "$cluster" env)"
results="$SCRATCH/results"
profile=tests/e2e/fixtures/perlmutter-on-slurm-local.yaml
image=tests/doubles/images/nvidia-pytorch
export PATH="$CCL_SOURCE_DIR/$image/bin:$PATH"
# Debian's torchrun made to start workers under Python 3.11 (tests/doubles/debian-torchrun says why).
export PYTHONPATH="$CCL_SOURCE_DIR/$image/site:$CCL_SOURCE_DIR/tests/doubles/debian-torchrun"

# The double as a TorchTitan checkout tagged v0.2.2, with the shared double library and the
# contracts where the double looks for them.
repo="$SCRATCH/torchtitan"
mkdir -p "$repo/tests/doubles" "$repo/docs"
cp -r tests/doubles/torchtitan/. "$repo/"
cp -r tests/doubles/lib "$repo/tests/doubles/lib"
cp -r docs/contracts "$repo/docs/contracts"
git -C "$repo" init --quiet
git -C "$repo" add -A
git -C "$repo" -c user.name=t -c user.email=t@t commit --quiet -m "TorchTitan v0.2.2 double"
git -C "$repo" tag v0.2.2

scale=(--set workload.hardware.xpu_spec.total_count=4 --set Model-executor.model_plan_parallelization.dp_shard=2
    --set Model-executor.model_plan_parallelization.tp=2 --set launch.container.runtime=none
    --set launch.time_limit=00:05:00 --set "launch.source.repo=$repo")

check_traces() { # check_traces RUN_DIR FIRST LAST: every rank's Kineto trace holds exactly ProfilerStep#FIRST..#LAST and GPU kernels
    /usr/bin/python3 - "$@" <<'EOF'
import json, sys
run, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for rank in range(4):
    d = json.load(open(f"{run}/traces/kineto_trace_{rank}.json"))
    steps = sorted(int(e["name"].split("#")[1]) for e in d["traceEvents"] if e["name"].startswith("ProfilerStep#"))
    assert steps == list(range(first, last + 1)), (rank, steps)
    assert d["distributedInfo"]["rank"] == rank, d["distributedInfo"]
    assert any(e.get("cat") == "kernel" and e["name"].startswith("ncclDevKernel") for e in d["traceEvents"]), rank
EOF
}

for name in llama-3.1-8b-torchtitan-perlmutter qwen3-4b-torchtitan-perlmutter; do
    card="workloads/$name/$name.yaml"
    expect_status 0 "$name through slurm-local" -- "$CCL_HARNESS" run "$card" --cluster "$profile" "${scale[@]}" --results "$results"
    run=$(latest_run)
    [ "$(run_json "$run" 'r["state"]')" = completed ] && pass || fail "$name: state $(run_json "$run" 'r["state"]'): $(cat "$run"/logs/* 2>/dev/null | tail -20)"
    # The card's window: wait 3 + warm-up 2, active 5 -> training steps 6..10, which torch.profiler
    # numbers ProfilerStep#5..#9 (training step k runs as profiler step k-1).
    check_traces "$run" 5 9 && pass || fail "$name: traces of the window"
    grep -q "model.name\|--model.flavor" "$card" && fail "$name: the card still names TorchTitan's registry in launch.args" || pass
    grep -rqx --include=train.toml 'name = "\(llama3\|qwen3\)"' "$run" && pass || fail "$name: train.toml lacks the registry name"
    expect_status 0 "$name: the bundle verifies" -- "$CCL_HARNESS" verify "${run%/}.tar.zst"
    expect_metrics "${run%/}.tar.zst" # every metric, none n/a
done

# The llama card asks for torch.profiler and nsys: two passes, nsys never over torch.profiler.
run=$(ls -dt "$results"/llama-3.1-8b-torchtitan-perlmutter-*/ | head -n 1)
for rank in 0 1 2 3; do
    [ -s "$run/traces/nsys_$rank.nsys-rep" ] && pass || fail "llama: no nsys report of rank $rank: $(ls "$run/traces")"
    [ "$(/usr/bin/python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0])' \
        "$run/traces/nsys_$rank.sqlite" 2>&1)" -gt 0 ] 2>/dev/null && pass || fail "llama: no SQLite export of rank $rank"
done
grep -rq "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS" "$run/logs" && fail "llama: torch.profiler ran under nsys" || pass
expect_status 0 "explain shows the two passes" -- "$CCL_HARNESS" explain workloads/llama-3.1-8b-torchtitan-perlmutter/llama-3.1-8b-torchtitan-perlmutter.yaml --cluster "$profile" "${scale[@]}"
expect_output "explain says why" "CUPTI allows one subscriber"

# The qwen card traces torch.profiler only: no nsys pass.
run=$(ls -dt "$results"/qwen3-4b-torchtitan-perlmutter-*/ | head -n 1)
ls "$run/traces" | grep -q nsys && fail "qwen: an nsys report without nsys in the card" || pass

# Bad: an option TorchTitan does not have, through launch.args: the job's preflight refuses it
# (exit 3) before torchrun, the job fails, and the run record says so.
card=workloads/qwen3-4b-torchtitan-perlmutter/qwen3-4b-torchtitan-perlmutter.yaml
expect_status 1 "an unknown TorchTitan option fails the run" -- "$CCL_HARNESS" run "$card" --cluster "$profile" "${scale[@]}" \
    --set 'launch.args=["--training.no_such_option=1"]' --results "$results"
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = failed ] && pass || fail "unknown option: state $(run_json "$run" 'r["state"]')"
reason=$(run_json "$run" 'r["reason"]')
grep -q "FAILED with exit code 3" <<<"$reason" && pass || fail "unknown option: the run record gives no reason: $(cat "$run/run.json")"
grep -q -- "--training.no_such_option is not an option" <<<"$reason" && pass || fail "unknown option: the reason lacks the preflight's words"
[ "$(run_json "$run" 'r["traces"]')" = "[]" ] && pass || fail "unknown option: a failed run kept traces"
# The job's preflight (tyro's --help in the image) refused it before any download or rendezvous.
grep -q -- "--training.no_such_option is not an option" "$run/logs/preflight.log" && pass ||
    fail "unknown option: the logs lack the preflight's refusal: $(ls -R "$run/logs")"
ls "$run"/logs/node_*.log >/dev/null 2>&1 && fail "unknown option: torchrun started after a failed preflight" || pass

# The same card in its image, the Perlmutter way: podman-hpc builds and migrates the rendered
# Containerfile (its double maps nvcr.io/nvidia/pytorch to $image) and runs each step in it.
if [ -x tests/doubles/podman-hpc/podman-hpc ]; then
    (
        export PATH="$CCL_SOURCE_DIR/tests/doubles/podman-hpc:$PATH" CCL_PODMAN_HPC_STATE="$SCRATCH/podman-hpc"
        llama=workloads/llama-3.1-8b-torchtitan-perlmutter/llama-3.1-8b-torchtitan-perlmutter.yaml
        expect_status 0 "the llama card under podman-hpc" -- "$CCL_HARNESS" run "$llama" --cluster "$profile" "${scale[@]}" \
            --set launch.container.runtime=podman-hpc --results "$results/podman"
        run=$(ls -dt "$results"/podman/*/ | head -n 1)
        check_traces "$run" 5 9 && pass || fail "podman-hpc: traces of the window: $(ls "$run/traces")"
        [ "$(ls "$run/traces" | grep -c '^nsys_[0-3].nsys-rep$')" -eq 4 ] && pass || fail "podman-hpc: nsys reports: $(ls "$run/traces")"
        expect_status 0 "the podman-hpc bundle verifies" -- "$CCL_HARNESS" verify "${run%/}.tar.zst"
        echo "$checks $failures" >"$SCRATCH/podman.counts"
    )
    read -r sub_checks sub_failures <"$SCRATCH/podman.counts"
    checks=$sub_checks failures=$sub_failures
else
    fail "no podman-hpc double at tests/doubles/podman-hpc"
fi

# Bad: strict planning names the fields TorchTitan cannot honour.
expect_status 2 "an unsupported model is refused" -- "$CCL_HARNESS" validate --strict "$card" --set workload.model.model_family=gpt-2 --set hf_url=https://huggingface.co/openai-community/gpt2
expect_output "the model field is named" "workload.model.model_family"
expect_output "the framework is named" "not supported for torchtitan"
expect_status 2 "fp16 is refused" -- "$CCL_HARNESS" validate --strict "$card" --set workload.model.precision=fp16
expect_output "the precision field is named" "workload.model.precision: fp16 is not supported for torchtitan"
expect_status 2 "wikitext is refused" -- "$CCL_HARNESS" validate --strict "$card" --set workload.data.dataset=wikitext
expect_output "the dataset field is named" "workload.data.dataset: \"wikitext\" is not supported for torchtitan"

# The doubles model the real rules directly.
work="$SCRATCH/direct"
mkdir -p "$work"
python3 -c 'from huggingface_hub import snapshot_download as s; s("Qwen/Qwen3-4B", local_dir="'"$work/assets"'")' && pass || fail "snapshot_download of an hf id"
expect_status 1 "snapshot_download refuses a family name" -- python3 -c 'from huggingface_hub import snapshot_download as s; s("qwen3 4b", local_dir="/nonexistent")'
expect_output "with the Hub's validation error" "HFValidationError"
"$CCL_HARNESS" render -q "$card" --cluster "$profile" "${scale[@]}" --out "$work/rendered" >/dev/null && pass || fail "render for the direct runs"
config="$work/rendered/train.toml"
titan() { # titan ARGS...: the double as rank 0 of 4, from its checkout, with $config
    (cd "$repo" && RANK=0 WORLD_SIZE=4 LOCAL_RANK=0 python3 -m torchtitan.train --job.config_file "$config" \
        --model.hf_assets_path "$work/assets" "$@")
}
expect_status 0 "the double runs the rendered config" -- titan --job.dump_folder "$work/plain"
[ -f "$work/plain/traces/iteration_10/rank0_trace.json" ] && pass || fail "trace not at traces/iteration_10/rank0_trace.json: $(find "$work/plain")"
expect_status 2 "a boolean takes no value (tyro)" -- titan --profiling.enable_profiling=false
sed 's/^seq_len = /sequence_length = /' "$work/rendered/train.toml" >"$work/bad.toml"
config="$work/bad.toml"
expect_status 1 "an unknown TOML key is refused" -- titan --job.dump_folder "$work/bad"
expect_output "as ConfigManager refuses it" "Invalid field names in <class 'torchtitan.config.job_config.Training'>"
config="$work/rendered/train.toml"
expect_status 1 "degrees that do not multiply to WORLD_SIZE are refused" -- titan --parallelism.tensor_parallel_degree 4
expect_output "with ParallelDims' message" "!= WORLD_SIZE(4)"
# torch.profiler under nsys: CUPTI's one subscriber is taken, the Kineto trace has no GPU kernels.
expect_status 0 "torch.profiler under nsys" -- env RANK=0 WORLD_SIZE=4 nsys profile --output="$work/nsys_%q{RANK}" \
    bash -c 'cd "$1" && shift && python3 -m torchtitan.train "$@"' _ "$repo" --job.config_file "$work/rendered/train.toml" \
    --model.hf_assets_path "$work/assets" --job.dump_folder "$work/both"
expect_output "CUPTI's error is printed" "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not [e for e in d["traceEvents"] if e.get("cat") == "kernel"]' \
    "$work/both/traces/iteration_10/rank0_trace.json" && pass || fail "the Kineto trace under nsys kept GPU kernels"
expect_status 1 "nsys refuses an option it does not have" -- nsys profile --no-such-option true
expect_output "as nsys does" "unrecognised option '--no-such-option'"
expect_status 1 "nsys export needs a type" -- nsys export "$work/nsys_0.nsys-rep"
finish
