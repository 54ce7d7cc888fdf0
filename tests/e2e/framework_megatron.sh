#!/bin/bash
# The Megatron-LM reference card (workloads/deepseek-v3-16b-megatron-perlmutter) through the
# rendered Perlmutter script on the slurm-local test cluster, with the Megatron double
# (tests/doubles/megatron-lm, checked against docs/contracts/megatron-lm-core_v0.15.3.yaml) in
# place of Megatron-LM, started by the real /usr/bin/torchrun.
#
# The test cluster has one node with 4 fake GPUs, so the card is scaled from 4 nodes x 4 GPUs
# (tp 2, dp 8, ep 8) to 1 node x 4 ranks: tp 2, dp_replicate 2, ep 2 (expert tensor parallel =
# tp, so etp·ep·pp = 4 = the world). Container runtime none (the fixture's default; no GPU image
# here). Everything else (window wait 3 + warm-up 2, active 5; 10 steps; global batch 64) is the
# card's. Skipped (125) when slurm-local is down: it is started by .ci/run, never here.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
cluster=clusters/slurm-local/cluster.sh
if ! bash "$cluster" status >/dev/null 2>&1; then
    echo "slurm-local is down: skipped"
    exit 125
fi
eval "$(bash "$cluster" env)"
results="$SCRATCH/results"
# What the nvidia-pytorch image provides (python3), and Debian's torchrun made to start workers
# under Python 3.11 (tests/doubles/debian-torchrun/sitecustomize.py says why).
image=tests/doubles/images/nvidia-pytorch
export PATH="$CCL_SOURCE_DIR/$image/bin:$PATH"
export PYTHONPATH="$CCL_SOURCE_DIR/$image/site:$CCL_SOURCE_DIR/tests/doubles/debian-torchrun"
card=workloads/deepseek-v3-16b-megatron-perlmutter/deepseek-v3-16b-megatron-perlmutter.yaml
fixture=tests/e2e/fixtures/perlmutter-on-slurm-local.yaml

repo="$SCRATCH/Megatron-LM"
megatron_double_repo "$repo"

scaled=(
    --set "launch.source.repo=$repo"
    --set launch.container.runtime=none
    --set workload.hardware.xpu_spec.total_count=4
    --set Model-executor.model_plan_parallelization.tp=2
    --set Model-executor.model_plan_parallelization.dp_replicate=2
    --set Model-executor.model_plan_parallelization.ep=2
)
run_card() { # run_card CARD [ARGS...]
    local c=$1
    shift
    "$CCL_HARNESS" run "$c" --cluster "$fixture" "${scaled[@]}" --results "$results" --git-cache "$SCRATCH/git" "$@"
}

# 1. The card end to end: four ranks' traces of exactly iterations 6..10, a bundle verify accepts.
expect_status 0 "the Megatron card through slurm-local" -- run_card "$card"
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = completed ] && pass || fail "state $(run_json "$run" 'r["state"]'): $(cat "$run"/logs/* 2>/dev/null | tail -20)"
for rank in 0 1 2 3; do
    /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
steps = sorted(int(e["name"].split("#")[1]) for e in d["traceEvents"] if e["name"].startswith("ProfilerStep#"))
assert d["distributedInfo"]["rank"] == int(sys.argv[2]), d["distributedInfo"]
assert steps == [6, 7, 8, 9, 10], steps
' "$run/traces/kineto_trace_$rank.json" "$rank" && pass || fail "trace of rank $rank: $(ls "$run/traces")"
done
[ "$(ls "$run/traces" | grep -c .)" -eq 4 ] && pass || fail "traces: $(ls "$run/traces")"
# Megatron's own log: the last rank prints every iteration, one past the window to save its trace.
grep -q "iteration       11/      11 |" "$run"/logs/node_0.log && pass || fail "iteration log: $(tail -5 "$run"/logs/node_0.log)"
# plan.json's micro-batch is what the script passes.
[ "$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["micro_batch_size"])' "$run/plan.json")" = 1 ] &&
    pass || fail "plan.json micro-batch"
grep -q -- "--micro-batch-size 1$" "$run/rendered/launch.sbatch" && pass || fail "rendered micro-batch"
expect_status 0 "the Megatron bundle verifies" -- "$CCL_HARNESS" verify "${run%/}.tar.zst"
expect_metrics "${run%/}.tar.zst" # every metric, none n/a

# 2. An option Megatron does not have, in launch.args: the job's preflight asks pretrain_gpt.py
#    for its --help (the double's argparse prints it) and stops before torchrun starts, naming it.
cp "$card" "$SCRATCH/unknown-flag.yaml"
sed -i 's/^    - --sequence-parallel$/&\n    - --no-such-flag=1/' "$SCRATCH/unknown-flag.yaml"
grep -q -- "--no-such-flag" "$SCRATCH/unknown-flag.yaml" && pass || fail "the card copy lacks the flag"
expect_status 1 "an unknown Megatron option fails the run" -- run_card "$SCRATCH/unknown-flag.yaml"
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = failed ] && pass || fail "state $(run_json "$run" 'r["state"]')"
grep -q -- "--no-such-flag is not an option" "$run"/logs/preflight.log && pass ||
    fail "no preflight refusal in $(tail -20 "$run"/logs/preflight.log)"
[ -e "$run"/logs/node_0.log ] && fail "torchrun started after a failed preflight" || pass
# Megatron's parser takes no abbreviation (allow_abbrev=False): neither does its preflight.
expect_status 3 "the preflight refuses an abbreviation Megatron refuses" -- /usr/bin/python3 templates/common/ccl_preflight.py \
    --framework megatron-lm --exact --help-command "/usr/bin/python3 tests/doubles/megatron-lm/pretrain_gpt.py" -- --micro-batch 1
expect_output "names the full option" "--micro-batch is not an option; --micro-batch-size is"

# 3. Degrees Megatron refuses: validate --strict names the field before anything runs...
expect_status 2 "ep 4 with tp 2 on 4 ranks is refused" -- "$CCL_HARNESS" validate --strict "$card" --cluster "$fixture" "${scaled[@]}" \
    --set Model-executor.model_plan_parallelization.ep=4
expect_output "the field is named" "Model-executor.model_plan_parallelization.ep"
expect_output "Megatron's rule is cited" "parallel_state.py:749"
# ...and the double refuses them as Megatron's initialize_model_parallel does.
args=(--tensor-model-parallel-size 2 --pipeline-model-parallel-size 1 --context-parallel-size 1
      --micro-batch-size 1 --global-batch-size 8 --seq-length 64 --max-position-embeddings 64 --train-iters 2
      --num-experts 4 --mock-data --tokenizer-type NullTokenizer --vocab-size 128)
expect_status 1 "the double refuses etp·ep·pp that does not divide the world" -- \
    /usr/bin/torchrun --standalone --nproc_per_node=4 tests/doubles/megatron-lm/pretrain_gpt.py "${args[@]}" --expert-model-parallel-size 4
expect_output "Megatron's message" "world_size (4) is not divisible by expert_tensor_model_pipeline_parallel size (8)"
expect_status 1 "the double refuses tp·pp·cp that does not divide the world" -- \
    /usr/bin/torchrun --standalone --nproc_per_node=4 tests/doubles/megatron-lm/pretrain_gpt.py "${args[@]}" --context-parallel-size 3
expect_output "Megatron's message" "world size (4) is not divisible by total_model_size"
expect_status 0 "the same options with degrees that fit" -- \
    /usr/bin/torchrun --standalone --nproc_per_node=4 tests/doubles/megatron-lm/pretrain_gpt.py "${args[@]}" --expert-model-parallel-size 2

# 4. The same card in its image, the Perlmutter way: podman-hpc build + migrate + run of the
#    rendered Containerfile (the podman-hpc double maps nvcr.io/nvidia/pytorch to $image).
export PATH="$CCL_SOURCE_DIR/tests/doubles/podman-hpc:$PATH"
export CCL_PODMAN_HPC_STATE="$SCRATCH/podman-hpc"
expect_status 0 "the Megatron card under podman-hpc" -- run_card "$card" --set launch.container.runtime=podman-hpc
run=$(latest_run)
[ "$(ls "$run/traces" | grep -c '^kineto_trace_[0-3].json$')" -eq 4 ] && pass || fail "podman-hpc traces: $(ls "$run/traces")"
expect_status 0 "the podman-hpc bundle verifies" -- "$CCL_HARNESS" verify "${run%/}.tar.zst"
expect_metrics "${run%/}.tar.zst"

# 5. A preprocessed dataset (the group 1 rows ran wikitext tokenized by tools/preprocess_data.py):
#    launch.dataset_path names PREFIX; the job reads PREFIX.bin/.idx where they are, mounted
#    read-only, with the model's HF tokenizer. The double opens both files as Megatron does.
mkdir -p "$SCRATCH/datasets"
head -c 4096 /dev/urandom >"$SCRATCH/datasets/wikitext_text_document.bin"
# An .idx starts with MMIDIDX\0\0 (indexed_dataset.py:46), which Megatron asserts when it opens it.
{ printf 'MMIDIDX\0\0'; head -c 512 /dev/urandom; } >"$SCRATCH/datasets/wikitext_text_document.idx"
data=(--set workload.data.dataset=wikitext --set "launch.dataset_path=$SCRATCH/datasets/wikitext_text_document")
expect_status 2 "c4 without a preprocessed prefix is refused (the job preprocesses only WikiText)" -- \
    "$CCL_HARNESS" validate --strict "$card" --cluster "$fixture" "${scaled[@]}" --set workload.data.dataset=c4
expect_output "says what to set" "launch.dataset_path: not set: megatron-lm reads dataset \"c4\" only preprocessed"
expect_status 0 "the Megatron card on a preprocessed dataset under podman-hpc" -- run_card "$card" "${data[@]}" \
    --set launch.container.runtime=podman-hpc
run=$(latest_run)
grep -qF -- "--data-path $SCRATCH/datasets/wikitext_text_document" "$run/rendered/launch.sbatch" && pass || fail "no --data-path"
grep -qF -- "--tokenizer-model deepseek-ai/deepseek-moe-16b-base" "$run/rendered/launch.sbatch" && pass || fail "no --tokenizer-model"
if grep -qE -- "^ +--mock-data$" "$run/rendered/launch.sbatch"; then fail "--mock-data beside --data-path"; else pass; fi
[ "$(ls "$run/traces" | grep -c '^kineto_trace_[0-3].json$')" -eq 4 ] && pass || fail "dataset run traces: $(ls "$run/traces")"
expect_status 0 "explain says where the data comes from" -- "$CCL_HARNESS" explain "$card" --cluster "$fixture" "${scaled[@]}" "${data[@]}"
expect_output "the prefix, at its origin" "Megatron's preprocessed wikitext (PREFIX.bin, PREFIX.idx)"
rm "$SCRATCH/datasets/wikitext_text_document.idx"
expect_status 1 "a prefix without its .idx fails in the job, naming the file" -- run_card "$card" "${data[@]}"
run=$(latest_run)
grep -rqF "launch.dataset_path: no $SCRATCH/datasets/wikitext_text_document.idx" "$run/logs" && pass ||
    fail "the job's log does not name the missing .idx: $(cat "$run"/logs/* 2>/dev/null | tail -5)"
{ printf 'NOTANIDX'; head -c 512 /dev/urandom; } >"$SCRATCH/datasets/wikitext_text_document.idx"
expect_status 1 "an .idx that is not Megatron's fails as Megatron fails" -- run_card "$card" "${data[@]}"
run=$(latest_run)
grep -rqF "bad header, cannot read: $SCRATCH/datasets/wikitext_text_document.idx" "$run/logs" && pass ||
    fail "no bad-header failure: $(cat "$run"/logs/* 2>/dev/null | tail -5)"

# 6. WikiText with no prefix, as the group 1 rows name it: the job fetches Salesforce/wikitext
#    (tests/doubles/hf-datasets, the `datasets` double), tokenizes it with tools/preprocess_data.py
#    (the double, with Megatron's parser) once into the HF cache, and trains on it. A second job
#    reuses it; an unreachable Hub fails the job and leaves no half-made dataset; a cached copy
#    that no longer matches its checksums is refused.
export PYTHONPATH="$CCL_SOURCE_DIR/tests/doubles/hf-datasets:$PYTHONPATH"
export CCL_DOUBLE_HF_CALLS="$SCRATCH/hf_calls"
hf="$SCRATCH/hf"
wiki=(--set workload.data.dataset=wikitext-103 --set "launch.env.HF_HOME=$hf")
cache="$hf/ccl-harness/megatron-data/wikitext-103-raw-v1-deepseek-ai--deepseek-moe-16b-base"
prefix="$cache/wikitext-103-raw-v1_text_document"
expect_status 0 "the card on WikiText the job preprocesses" -- run_card "$card" "${wiki[@]}"
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = completed ] && pass || fail "state $(run_json "$run" 'r["state"]'): $(tail -20 "$run"/logs/data_prep.log)"
[ -s "$prefix.bin" ] && [ -s "$prefix.idx" ] && pass || fail "no preprocessed dataset in $cache: $(ls -R "$hf" | head)"
grep -q "Processed 121 documents" "$run/logs/data_prep.log" && pass || fail "preprocess_data.py's log: $(cat "$run/logs/data_prep.log")"
grep -qF -- "--data-path \"\$data_prefix\"" "$run/rendered/launch.sbatch" && pass || fail "no --data-path"
grep -qF "$prefix.bin" "$run/logs/dataset.sha256" && pass || fail "dataset.sha256: $(cat "$run/logs/dataset.sha256")"
[ "$(ls "$run/traces" | grep -c '^kineto_trace_[0-3].json$')" -eq 4 ] && pass || fail "WikiText run traces: $(ls "$run/traces")"
[ "$(grep -c 'load_dataset Salesforce/wikitext wikitext-103-raw-v1 split=train' "$CCL_DOUBLE_HF_CALLS")" -eq 1 ] && pass ||
    fail "calls: $(cat "$CCL_DOUBLE_HF_CALLS")"
expect_status 0 "a second job reuses the preprocessed dataset" -- run_card "$card" "${wiki[@]}"
run=$(latest_run)
grep -q "reusing the preprocessed dataset" "$run/logs/data_prep.log" && pass || fail "$(cat "$run/logs/data_prep.log")"
[ "$(grep -c load_dataset "$CCL_DOUBLE_HF_CALLS")" -eq 1 ] && pass || fail "fetched again: $(cat "$CCL_DOUBLE_HF_CALLS")"
# Offline, with an empty cache: the job fails naming the Hub error, before torchrun, and leaves nothing behind.
expect_status 1 "an unreachable Hub fails the job" -- env CCL_DOUBLE_HF_OFFLINE=1 "$CCL_HARNESS" run "$card" \
    --cluster "$fixture" "${scaled[@]}" --results "$results" --git-cache "$SCRATCH/git" \
    --set workload.data.dataset=wikitext-103 --set "launch.env.HF_HOME=$SCRATCH/hf-offline"
run=$(latest_run)
grep -q "ConnectionError" "$run/logs/data_prep.log" && pass || fail "no Hub error in $(cat "$run/logs/data_prep.log")"
[ -z "$(ls -A "$SCRATCH/hf-offline/ccl-harness/megatron-data" 2>/dev/null)" ] && pass ||
    fail "left behind: $(ls -A "$SCRATCH/hf-offline/ccl-harness/megatron-data")"
[ -e "$run/logs/node_0.log" ] && fail "torchrun started without a dataset" || pass
# A cached copy changed since it was made is refused, not trained on.
printf 'x' >>"$prefix.bin"
expect_status 1 "a changed cached dataset fails the job" -- run_card "$card" "${wiki[@]}"
run=$(latest_run)
grep -rq "no longer matches its SHA256SUMS" "$run/logs" && pass || fail "no checksum refusal: $(cat "$run"/logs/* | tail -5)"
expect_status 0 "explain says where the WikiText comes from" -- "$CCL_HARNESS" explain "$card" --cluster "$fixture" "${scaled[@]}" "${wiki[@]}"
expect_output "the preprocessing, with its reason" "the job preprocesses Hugging Face Salesforce/wikitext (wikitext-103-raw-v1)"

finish
