#!/bin/bash
# The platform audit as a test (issue 26): every reference card, rendered for its own target,
# meets the rules tests/e2e/platform_rules.py's table gives it (HF cache made on every node before
# a container mounts it, the NCCL plugin of the image's CUDA major, one profiler per process, one
# JSON per timed pass, the preflight first, no image build in the job, the dataset that runs,
# traces where the collector looks). Then each rule is shown to catch the render that broke it
# before: the same render with the old text put back must fail that rule.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
rules=(/usr/bin/python3 tests/e2e/platform_rules.py)

# 1. Every card in workloads/ is in the table, and meets its rules.
for card in workloads/*/*.yaml; do
    name=$(basename "$card" .yaml)
    grep -qx "$name" <<<"$("${rules[@]}" cards)" && pass || fail "$name is not in platform_rules.py's table: add its rules"
    expect_status 0 "render $name" -- "$CCL_HARNESS" render -q "$card" --out "$SCRATCH/ref/$name"
    expect_status 0 "$name meets its platform rules" -- "${rules[@]}" check "$name" "$SCRATCH/ref/$name"
done
# Every Perlmutter card owes the HF-cache, plugin and preflight rules at least.
for name in $(cd workloads && ls -d -- *-perlmutter); do
    for rule in hf_cache_on_every_node nccl_plugin_is_image_cuda preflight_before_start one_profiler_per_process; do
        grep -qx "$rule" <<<"$("${rules[@]}" rules "$name")" && pass || fail "$name does not owe $rule"
    done
done

# broken RULE CARD DIR WHAT: the rules over DIR must name RULE.
broken() {
    local rule=$1 card=$2 dir=$3 what=$4
    expect_status 1 "$what fails $rule" -- "${rules[@]}" check "$card" "$dir"
    expect_output "$what names $rule" "$card: $rule: "
}
copy() { rm -rf "${SCRATCH:?}/$2" && cp -r "$SCRATCH/ref/$1" "$SCRATCH/$2"; }

# 2. The old renders, each failing its rule.
megatron=deepseek-v3-16b-megatron-perlmutter
copy "$megatron" no-hf-mkdir
sed -i '/mkdir -p "\$HF_HOME"/d' "$SCRATCH/no-hf-mkdir/launch.sbatch"
broken hf_cache_on_every_node "$megatron" "$SCRATCH/no-hf-mkdir" "Megatron without the per-node HF_HOME"

copy "$megatron" image-in-job
sed -i 's/^image=\(.*\)$/image=\1\npodman-hpc build --tag "$image" --file "$RUN_DIR\/Containerfile" "$RUN_DIR"/' "$SCRATCH/image-in-job/launch.sbatch"
broken image_built_before_job "$megatron" "$SCRATCH/image-in-job" "an image built inside the job"

copy "$megatron" no-preflight
sed -i 's/ccl_preflight\.py/ccl_other.py/g' "$SCRATCH/no-preflight/launch.sbatch"
broken preflight_before_start "$megatron" "$SCRATCH/no-preflight" "Megatron without its preflight"

# Megatron traced by torch.profiler and nsys: two passes now; one process under both before.
expect_status 0 "render Megatron with json and nsys" -- "$CCL_HARNESS" render -q "workloads/$megatron/$megatron.yaml" \
    --set 'metric_source.traces=[json,nsys]' --out "$SCRATCH/megatron-nsys"
expect_status 0 "Megatron with json and nsys meets its rules" -- "${rules[@]}" check "$megatron" "$SCRATCH/megatron-nsys"
[ "$(grep -c '^launcher_for [01]$' "$SCRATCH/megatron-nsys/launch.sbatch")" = 2 ] && pass || fail "Megatron json+nsys is not two passes"
rm -rf "$SCRATCH/one-process" && cp -r "$SCRATCH/megatron-nsys" "$SCRATCH/one-process"
sed -i '/^launcher_for 0$/a launch+=(--no_python nsys profile python3)' "$SCRATCH/one-process/launch.sbatch"
broken one_profiler_per_process "$megatron" "$SCRATCH/one-process" "torch.profiler under nsys in one process"

# SGLang as the card said before: driver cuda_12.9 and no declared image CUDA, so the CUDA-12
# plugin for a CUDA 13 image.
sglang=deepseek-moe-16b-sglang-perlmutter
sed -e 's/^    driver_version: cuda_13.0.*$/    driver_version: cuda_12.9/' -e '/^    cuda: "13.0"$/d' \
    "workloads/$sglang/$sglang.yaml" >"$SCRATCH/$sglang.yaml"
expect_status 0 "render the old SGLang card" -- "$CCL_HARNESS" render -q "$SCRATCH/$sglang.yaml" --out "$SCRATCH/old-sglang"
grep -q -- '--gpu --nccl --net' "$SCRATCH/old-sglang/launch.sbatch" && pass || fail "the old SGLang card's plugin"
broken nccl_plugin_is_image_cuda "$sglang" "$SCRATCH/old-sglang" "SGLang's CUDA from the card"
# The image's CUDA against the card's: a mismatch is an error at driver_version's line.
expect_status 2 "a driver_version that is not the image's CUDA" -- "$CCL_HARNESS" validate --strict \
    "workloads/$sglang/$sglang.yaml" --set launch.container.cuda=12.9
expect_output "names the field and both versions" "workload.hardware.driver_version"
expect_output "says the image's CUDA" "built on CUDA 12"
expect_status 2 "a launch.container.cuda that is no version" -- "$CCL_HARNESS" validate --strict \
    "workloads/$sglang/$sglang.yaml" --set launch.container.cuda=latest
expect_output "names launch.container.cuda" "launch.container.cuda"

# vLLM on TPU as it rendered before: --profile and --output-json in one pass.
vllm_tpu=qwen3-4b-vllm-tpu-v6e
copy "$vllm_tpu" one-pass
sed -i 's/vllm bench latency "\${args\[@\]}" "\${profile_args\[@\]}"/& "${timed_args[@]}"/' "$SCRATCH/one-pass/remote.sh"
broken one_json_per_timed_pass "$vllm_tpu" "$SCRATCH/one-pass" "vLLM TPU's profiled pass writing the JSON"

# The serving cards' dataset is what runs: another one is refused where it is written (c4: no
# engine here reads it; WikiText a vLLM GPU card serves as prompts the job writes).
for card in qwen3-4b-vllm-perlmutter "$sglang" "$vllm_tpu"; do
    expect_status 2 "$card with dataset c4" -- "$CCL_HARNESS" validate --strict "workloads/$card/$card.yaml" \
        --set workload.data.dataset=c4
    expect_output "$card: the dataset's field" "workload.data.dataset"
    expect_output "$card: why" "random token prompts"
done
finish
