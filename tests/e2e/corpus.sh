#!/bin/bash
# Compatibility with the CCL-Bench corpus: every card is validated, and how many pass, warn and
# fail is pinned per directory, so a change that rejects a real card cannot land unnoticed.
source "$(dirname "$0")/lib.sh"

[ -d "$CORPUS" ] || { echo "corpus not found at $CORPUS (../shared beside the checkout)" >&2; exit 1; }

# count DIR [FLAGS...]: prints "ok warn fail" for every card under DIR.
count() {
    local dir=$1 ok=0 warn=0 bad=0 file out status
    shift
    while IFS= read -r -d '' file; do
        status=0
        out=$("$CCL_HARNESS" validate "$@" "$file" 2>&1) || status=$?
        if [ "$status" -eq 2 ]; then
            bad=$((bad + 1))
            # Every failure must point somewhere: file:line:column or the file itself.
            grep -qE "error: .*\.yaml(:[0-9]+:[0-9]+)?: " <<<"$out" || fail "no position in error for $file: $out"
        elif [ "$status" -ne 0 ]; then
            fail "validate $file exited $status: $out"
        elif grep -q "warning:" <<<"$out"; then
            warn=$((warn + 1))
        else
            ok=$((ok + 1))
        fi
    done < <(find "$CORPUS/$dir" -name '*.yaml' -print0 | sort -z)
    echo "$ok $warn $bad"
}

check_counts() {
    local what=$1 want=$2 got=$3
    if [ "$got" = "$want" ]; then pass; else fail "$what: ok/warn/fail = $got, pinned $want"; fi
}

# The pinned numbers. When a change moves one, look at which card moved and why before updating.
check_counts "trace_collection" "35 76 1" "$(count trace_collection)"
check_counts "workload_suite" "0 14 0" "$(count workload_suite)"
check_counts "trace_collection_backlog" "0 26 0" "$(count trace_collection_backlog)"
check_counts "trace_collection_bad" "0 38 22" "$(count trace_collection_bad)"

# --strict asks whether a card could run as written. No archived card can (none has a launch:
# section with an account, a pinned image or a TPU project), but the card-intrinsic findings are
# pinned too: they are what the corpus really gets wrong.
strict_log="$SCRATCH/strict.txt"
find "$CORPUS/trace_collection" -name '*.yaml' -print0 | sort -z |
    xargs -0 -n 1 "$CCL_HARNESS" validate --strict >"$strict_log" 2>&1 || true
# None contradicts itself here: the 4 qwen3-4b tp 2 rows ran on 2 of a node's 4 GPUs (their run.sh:
# NUM_GPUS=4, --tensor-parallel-size 2), a warning at total_count; 3 Mixtral EP rows (a fourth is not YAML) gave ep 4
# for vLLM's tp·dp (server.sh: --data-parallel-size 4 --enable-expert-parallel), a warning at ep.
check_counts "--strict: cards whose parallel degrees do not multiply to total_count" 0 \
    "$(grep -c 'but total_count is' "$strict_log")"
check_counts "--strict: cards run on part of one node, said at total_count" 4 \
    "$(grep -c "total_count: total_count [0-9]*, but .*: the run uses" "$strict_log")"
check_counts "--strict: vLLM cards whose ep means tp·dp engines, said at ep" 3 \
    "$(grep -c "ep: ep [0-9]* with tp [0-9]* and no dp: vllm's expert-parallel group is tp·dp" "$strict_log")"
# Expert parallelism is counted differently by each framework (harness/frameworks/): vLLM spreads
# experts over tp·dp, SGLang's DeepSeek-MoE v1 has none.
check_counts "--strict: cards whose ep is not what their engine runs" 4 "$(grep -c 'model_plan_parallelization.ep: ep [0-9]* is not what' "$strict_log")"
# The 7 vLLM cards that asked one bench engine for data parallelism are serving cards: they run
# vllm serve (--data-parallel-size) and vllm bench serve now (plan/frameworks/vllm_serve.cpp),
# which reads their dataset only where it has a loader for it, from a file the card must name.
check_counts "--strict: vLLM cards asking one bench engine for data parallelism" 0 \
    "$(grep -c 'model_plan_parallelization.dp_replicate: data parallel [0-9]* is not supported for vllm' "$strict_log")"
# The 13 group 9 wikitext rows are served WikiText-2 prompts the job writes (as their run_script.py).
check_counts "--strict: vLLM serving cards naming a dataset vllm bench serve has no loader for" 0 \
    "$(grep -c 'workload.data.dataset: "[^"]*" is not a dataset vllm bench serve reads' "$strict_log")"
# The 3 ShareGPT rows name vLLM's public file, which the job fetches (no launch.dataset_path).
check_counts "--strict: vLLM serving cards whose dataset file is not named (launch.dataset_path)" 0 \
    "$(grep -c 'launch.dataset_path: not set: dataset' "$strict_log")"
# The 2 group-4 rows whose total_count is the chips used (2) of a v6e-8 VM: a warning, not a refusal.
check_counts "--strict: cards asking for a TPU slice that does not exist" 0 "$(grep -c 'error: .*there is no v6e-' "$strict_log")"
check_counts "--strict: cards using part of a TPU VM's slice, said at total_count" 2 \
    "$(grep -c 'warning: .*there is no v6e-[0-9]* slice: the run uses' "$strict_log")"
check_counts "--strict: offline cards whose \"custom\" names no file, said at dataset" 8 \
    "$(grep -c 'warning: .*"custom" names no prompt file' "$strict_log")"
check_counts "--strict: cards whose batch does not divide" 1 "$(grep -c 'is not divisible by data parallelism' "$strict_log")"
check_counts "--strict: cards that pass" 0 "$(grep -c ': valid' "$strict_log")"

# With only site facts supplied (an account, a pinned image, a TPU project), as a contributor
# regenerating a row would: the number of corpus cards that pass --strict may only go up
# (issue 27: 33 of 212 when it was filed, 7 of them torchxla cards that never rendered; 85 of 213
# since framework-aware profiling windows, cuda_12.x, the lifted Model-executor and TorchTitan's
# DeepSeek-V3 16B, --strict rendering every card it passes; 91 since the torchxla templates; 95 once vLLM's
# ep = tp·dp and a run on part of one node were read as their contributors ran them; 119 once the
# job fetched the public ShareGPT and BurstGPT files vLLM's benchmarks README names; 127 once the
# group-4 TPU rows' "custom" without a file and 2 chips of a v6e-8 VM were read as they ran; 133 once
# Megatron's job preprocessed WikiText itself; 146 once vLLM's job wrote WikiText as prompts;
# 148 once SGLang serving cards ran launch_server + bench_serving, which take --pp-size).
# A rise is progress: raise the floor.
strict_floor=148
# The site facts come from a defaults file only, as a contributor would keep them.
site_defaults="$SCRATCH/defaults.yaml"
printf 'launch:\n  account: m1234\n  container:\n    image: docker.io/library/x@sha256:%s\n  tpu:\n    project: p\n' \
    "$(printf '0%.0s' {1..64})" >"$site_defaults"
site=(--set launch.account=m1234 --set "launch.container.image=docker.io/library/x@sha256:$(printf '0%.0s' {1..64})"
    --set launch.tpu.project=p)
passing=0
while IFS= read -r -d '' card; do
    if CCL_HARNESS_DEFAULTS="$site_defaults" "$CCL_HARNESS" validate -q --strict "$card" >/dev/null 2>&1; then
        passing=$((passing + 1))
    fi
done < <(find "$CORPUS" -name '*.yaml' -print0)
[ "$passing" -ge "$strict_floor" ] && pass || fail "--strict with site facts: $passing corpus cards pass, fewer than $strict_floor"
echo "corpus: $passing cards pass --strict with site facts (floor $strict_floor)"
# docs/corpus.md is generated by docs/corpus.sh, in one harness process; the committed page must
# say what the harness now does (regenerate it when a count moves).
expect_status 0 "docs/corpus.sh writes the corpus report" -- \
    bash "$CCL_SOURCE_DIR/docs/corpus.sh" "$CCL_HARNESS" "$CORPUS" "$SCRATCH/corpus.md"
expect_eq "docs/corpus.md is current (run docs/corpus.sh)" "$(grep -m1 '^\*\*' "$CCL_SOURCE_DIR/docs/corpus.md")" \
    "$(grep -m1 '^\*\*' "$SCRATCH/corpus.md")"
# The torchxla training cards (torchprime on torch_xla, templates/torchxla/tpu-v6e) pass --strict
# with site facts, rendered, or are refused at the line of the field the rendered run cannot honour.
torchxla_passing=0
while IFS= read -r card; do
    if "$CCL_HARNESS" validate --strict "$card" "${site[@]}" >"$SCRATCH/torchxla.out" 2>&1; then
        torchxla_passing=$((torchxla_passing + 1))
        pass
    else
        grep -Eq "^ccl-harness: error: $(basename "$card"):[0-9]+:[0-9]+: [A-Za-z_.-]+: .* for torchxla" \
            <(sed "s|$CORPUS/[^ ]*/||" "$SCRATCH/torchxla.out") &&
            pass || fail "$(basename "$card"): refused without a field and line: $(cat "$SCRATCH/torchxla.out")"
    fi
done < <(grep -rl --include='*.yaml' 'name: *torchxla *\(#.*\)\?$' "$CORPUS/trace_collection" | sort)
[ "$torchxla_passing" -ge 6 ] && pass || fail "torchxla corpus cards passing --strict: $torchxla_passing, fewer than 6"
# The one that does not: it trained on c4, which torchprime loads only whole (no streaming).
c4="$CORPUS/trace_collection/llama-3.1-8b-torchxla-train-tp4-dp1-fsdp2-tpu/llama-3.1-8b-torchxla-train-tp4-dp1-fsdp2-tpu.yaml"
expect_status 2 "the c4 torchxla card is refused" -- "$CCL_HARNESS" validate --strict "$c4" "${site[@]}"
expect_output "at its dataset line" "llama-3.1-8b-torchxla-train-tp4-dp1-fsdp2-tpu.yaml:25:14: workload.data.dataset: c4 is not supported for torchxla"


# The one card in trace_collection that is not valid YAML: exit 2 with line and column.
bad_yaml=$(find "$CORPUS/trace_collection" -name 'Mixtral8x7B-vllmEP4-Perlmutter\[defaultall2all_32_8192\]-group12.yaml')
expect_status 2 "invalid corpus YAML" -- "$CCL_HARNESS" validate "$bad_yaml"
expect_output "invalid corpus YAML position" "defaultall2all_32_8192]-group12.yaml:18:12: invalid YAML"

# Model-executor indented under workload is read where it belongs, with a warning at its line (as
# CCL-Bench's loader reads it); this card is still refused for its batch sizes given as a list.
tpu_bad="$CORPUS/trace_collection_bad/Qwen3-4B-torchxla-vllm-tp4-tpu-group-4/Qwen3-4B-torchxla-vllm-tp4-tpu-group-4.yaml"
expect_status 2 "a list of batch sizes" -- "$CCL_HARNESS" validate "$tpu_bad"
expect_output "misplaced section message" "Qwen3-4B-torchxla-vllm-tp4-tpu-group-4.yaml:41:3: workload.Model-executor: section \"Model-executor\" is nested under workload; read as the top-level section"
expect_output "the list named" "workload.data.batch_size: expected a positive integer, got a list of 8"
expect_output "list batch size" "workload.data.batch_size: expected a positive integer, got a list of 8"
expect_output "and how to run that sweep" "a list is a sweep, one run per value: ccl-harness sweep CARD --vary workload.data.batch_size=1,2,4,8,16,32,64,128"

finish
