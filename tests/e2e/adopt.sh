#!/bin/bash
# adopt on real archived rows (tests/fixtures/adopt/, copied from upstream CCL-Bench with the
# scripts their contributors ran): the completed card passes validate --strict with site facts,
# its render runs the parameters the scripts ran, and disagreements and unresolved words are said
# on stderr with FILE:LINE. Then bad input: one clear error each, exit 2.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
fixtures=tests/fixtures/adopt
digest=$(printf '0%.0s' {1..64})
export CCL_HARNESS_DEFAULTS="$SCRATCH/defaults.yaml"
cat >"$CCL_HARNESS_DEFAULTS" <<YAML
launch:
  account: m1234
  container:
    image: docker.io/library/x@sha256:$digest
  tpu:
    project: p
YAML

# adopt_row ROW SCRIPT...: adopts the row's card, keeps stdout in $SCRATCH/ROW.yaml, stderr in
# $OUT; then the adopted card must pass --strict and render into $SCRATCH/ROW.render.
adopt_row() {
    local row=$1 adopted="$SCRATCH/$1.yaml" rc=0 flags=()
    shift
    for script in "$@"; do flags+=(--script "$fixtures/$row/$script"); done
    "$CCL_HARNESS" adopt "$fixtures/$row/$row.yaml" "${flags[@]}" >"$adopted" 2>"$SCRATCH/$row.err" || rc=$?
    expect_eq "$row: adopt exits 0" 0 "$rc"
    OUT=$(cat "$SCRATCH/$row.err")
    local errors
    errors=$OUT
    expect_status 0 "$row: the adopted card passes --strict" -- "$CCL_HARNESS" validate --strict "$adopted"
    expect_status 0 "$row: the adopted card renders" -- "$CCL_HARNESS" render "$adopted" --out "$SCRATCH/$row.render"
    OUT=$errors
}

# expect_rendered ROW PATTERN: the rendered launch script has a line matching PATTERN (grep -E).
expect_rendered() {
    if grep -qE -- "$2" "$SCRATCH/$1.render/launch.sbatch"; then pass; else fail "$1: launch.sbatch lacks /$2/"; fi
}
expect_adopted() { # expect_adopted ROW FIELD VALUE: the adopted card's FIELD (dotted) is VALUE
    local got
    got=$(/usr/bin/python3 -c 'import sys, yaml
node = yaml.safe_load(open(sys.argv[1]))
for part in sys.argv[2].split("."):
    node = node.get(part) if isinstance(node, dict) else None
print(node)' "$SCRATCH/$1.yaml" "$2")
    expect_eq "$1: $2" "$3" "$got"
}

# 1. vllm serve + benchmark.py (group 12): dp 4 with expert parallelism, the engine limits, the
#    server's own flags as launch.args, its VLLM_* exports as launch.env.
row='Mixtral8x7B-vllmEP4-Perlmutter[defaultall2all_32_16384]-group12'
adopt_row "$row" server.sh client.sh
expect_output "dp: the card says 1, the server ran 4" \
    "warning: $fixtures/$row/server.sh:40: Model-executor.model_plan_parallelization.dp_replicate: card says 1, the script ran 4; following the script"
expect_output "the phase" "workload.model.phase: card says inference, the script ran serving"
expect_adopted "$row" launch.args "['--trust-remote-code', '--enforce-eager', '--disable-log-requests']"
expect_adopted "$row" launch.env.VLLM_FLASHINFER_MOE_BACKEND throughput
expect_adopted "$row" launch.dataset_path ../ShareGPT_V3_unfiltered_cleaned_split.json
expect_adopted "$row" workload.data.num_prompts 50
expect_rendered "$row" '--data-parallel-size 4'
expect_rendered "$row" '--enable-expert-parallel'
expect_rendered "$row" '--max-num-seqs 32'
expect_rendered "$row" '--max-num-batched-tokens 16384'
expect_rendered "$row" '^add_args --enforce-eager'
expect_rendered "$row" '--num-prompts 50'
expect_rendered "$row" '--dataset-name sharegpt'

# 2. api_server + `python -m vllm.entrypoints.cli.main bench serve` (Qwen3-4B tp4): the model is
#    a path under $PSCRATCH, which only running would tell: reported, and the card's hf_url stands.
row='qwen3-4b-vllm-tp4-perlmutter[nccl]'
adopt_row "$row" server.sh client.sh
expect_output "the unresolved model, at its line" "warning: $fixtures/$row/server.sh:19: --model \$PSCRATCH/models/Qwen3-4B: depends on \$PSCRATCH"
expect_output "and in the client" "warning: $fixtures/$row/client.sh:12: --model"
expect_adopted "$row" workload.data.request_rate 8
expect_rendered "$row" '--tensor-parallel-size 4'
expect_rendered "$row" '--request-rate 8'
expect_rendered "$row" '--num-prompts 200'
expect_rendered "$row" '--random-input-len 1024'
expect_rendered "$row" '^add_args --enforce-eager'
expect_rendered "$row" 'Qwen/Qwen3-4B'
expect_status 0 "-v, from another directory" -- bash -c 'cd "$1" && "$2" adopt -v "$3/$4/$4.yaml" --script "$3/$4/server.sh" >/dev/null' \
    _ "$SCRATCH" "$CCL_HARNESS" "$CCL_SOURCE_DIR/$fixtures" "$row"
expect_output "-v says what the card was silent on" "server.sh:20: launch.args: the card is silent, the script ran --enforce-eager"
expect_output "and which options it left out" "server.sh:22: --port: the rendered run sets its own"

# 3. TorchTitan TOML (llama3 tp 4): the dataset it ran was c4_test, not the card's c4.
row=llama3-torchtitan-nccl-4gpu-tp_4-b_4-s_512
adopt_row "$row" "$row.toml"
expect_output "the dataset disagreement" "workload.data.dataset: card says c4, the script ran c4_test; following the script"
expect_adopted "$row" launch.steps 10
expect_eq "$row: tensor_parallel_degree rendered" 1 "$(grep -c '^tensor_parallel_degree = 4$' "$SCRATCH/$row.render/train.toml")"
expect_eq "$row: dataset rendered" 1 "$(grep -c '^dataset = "c4_test"$' "$SCRATCH/$row.render/train.toml")"
expect_eq "$row: steps rendered" 1 "$(grep -c '^steps = 10$' "$SCRATCH/$row.render/train.toml")"

# 4. TorchTitan TOML, FSDP over 4 GPUs (group 5).
row=qwen-3-8b-torchtitan-dp_4-perlmutter-group_5
adopt_row "$row" qwen-dp-4gpu-2batch.toml
expect_eq "$row: data_parallel_shard_degree rendered" 1 "$(grep -c '^data_parallel_shard_degree = 4$' "$SCRATCH/$row.render/train.toml")"

# 5. SGLang launch_server + bench_serving (a generated run.sh: upstream has no hand-written one).
row=qwen3-4b-sglang-tp4-batch8-perlmutter
adopt_row "$row" run.sh
expect_rendered "$row" '--tp-size 4'
expect_rendered "$row" '--batch-size 8'

# 6. vllm bench latency: upstream keeps no hand-written one, so a script written here, against the
#    corpus card of a latency row: batch 16 against the card's 8, engine options as launch.args.
row=llama-3.1-8b-vllm-tp4-batch8-perlmutter
fixtures=$SCRATCH/latency
mkdir -p "$fixtures/$row"
cat >"$fixtures/$row/run.sh" <<'SH'
#!/bin/bash
TP=${TP:-4}
vllm bench latency --model meta-llama/Llama-3.1-8B \
  --tensor-parallel-size "$TP" --batch-size 16 --input-len 1024 --output-len 128 \
  --num-iters 20 --enforce-eager --max-num-seqs 16 --output-json "$(pwd)/latency.json"
SH
cp "$(find "$CORPUS/trace_collection" -name "$row.yaml" | head -n 1)" "$fixtures/$row/"
adopt_row "$row" run.sh
fixtures=tests/fixtures/adopt
expect_output "the batch, at its continuation line" "run.sh:4: workload.data.batch_size: card says 8, the script ran 16; following the script"
expect_rendered "$row" '--batch-size 16'
expect_rendered "$row" '--tensor-parallel-size 4'
expect_rendered "$row" '^add_args --max-num-seqs'
expect_rendered "$row" '--num-iters 20'

# 7. A TorchTitan row whose run.txt is notes around `./run_train.sh` (group 5): the TOML says
#    what ran; run.txt names no command adopt knows, which is a note, not an error.
row=qwen-3-8b-torchtitan-dp_4-perlmutter-group_5
adopt_row "$row" run.txt qwen-dp-4gpu-2batch.toml
expect_eq "$row: with run.txt, data_parallel_shard_degree rendered" 1 \
    "$(grep -c '^data_parallel_shard_degree = 4$' "$SCRATCH/$row.render/train.toml")"
expect_status 0 "$row: --json" -- "$CCL_HARNESS" adopt "$fixtures/$row/$row.yaml" --script "$fixtures/$row/run.txt" \
    --script "$fixtures/$row/qwen-dp-4gpu-2batch.toml" --json
if /usr/bin/python3 - "$OUT" <<'PY'; then pass; else fail "adopt --json: $OUT"; fi
import json, sys, yaml
a = json.loads(sys.argv[1])
assert [r.split(": ")[-1] for r in a["recognized"]] == ["torchtitan toml"], a["recognized"]
assert any(n["where"].endswith("run.txt") and "names no command adopt knows" in n["message"] for n in a["notes"]), a["notes"]
card = yaml.safe_load(a["card_yaml"])
assert card["Model-executor"]["model_plan_parallelization"]["dp_shard"] == 4, card
assert all({"where", "field", "value", "option"} <= set(f) for f in a["filled"]), a["filled"]
PY

# 8. MaxText train.py KEY=VALUE (a generated run.sh, e45d0d3): the global batch is
#    per_device_batch_size x the card's 8 chips; keys MaxText itself refuses are said, and the
#    adopted card is refused where the script could not have run (model_name is not MaxText's).
row=deepseek-v2-16b-maxtext-train-tp2-ep4-dp1-tpu
expect_status 0 "$row: adopt" -- bash -c '"$0" adopt -v "$1" --script "$2" >"$3"' "$CCL_HARNESS" "$fixtures/$row/$row.yaml" \
    "$fixtures/$row/run.sh" "$SCRATCH/$row.yaml"
expect_output "the global batch" "run.sh:18: workload.data.batch_size: card says 8, the script ran 64; following the script"
expect_output "a key MaxText refuses" "run.sh:17: ici_mesh_shape: not a MaxText option at tpu-recipes-v0.1.4"
expect_adopted "$row" workload.data.seq_len 1024
expect_adopted "$row" launch.steps 10
expect_adopted "$row" launch.args "['model_name=deepseek-v2-16b']"
expect_status 2 "$row: the adopted card is refused at its model_name" -- "$CCL_HARNESS" validate --strict "$SCRATCH/$row.yaml"
expect_output "MaxText's own list" "model_name=deepseek-v2-16b is not a model of maxtext at tpu-recipes-v0.1.4"

# 9. What ran on a TPU VM through `gcloud ... tpu-vm ssh --command "..."` (a script written here
#    against the corpus card of a TPU latency row): read inside the string, at its own lines.
row=deepseek-v2-lite-vllm-tp4-batch128
fixtures=$SCRATCH/tpu
mkdir -p "$fixtures/$row"
cat >"$fixtures/$row/run.sh" <<'SH'
#!/bin/bash
ZONE=${1:-us-east5-b}
TPU_NAME=${2:-my-v6e-4}
gcloud compute tpus tpu-vm ssh "$TPU_NAME" --zone "$ZONE" --worker=all --command "
  cd ~/
  vllm bench latency --model deepseek-ai/DeepSeek-V2-Lite \
    --tensor-parallel-size 4 --batch-size 64 --input-len 1024 --output-len 128
"
SH
cp "$(find "$CORPUS/trace_collection" -name "$row.yaml" | head -n 1)" "$fixtures/$row/"
expect_status 0 "$row: adopt" -- bash -c '"$0" adopt "$1" --script "$2" >"$3"' "$CCL_HARNESS" "$fixtures/$row/$row.yaml" \
    "$fixtures/$row/run.sh" "$SCRATCH/$row.yaml"
# Inside double quotes bash drops a backslash-newline, so the whole vllm command is the string's line 6.
expect_output "the batch, at its line inside the string" "run.sh:6: workload.data.batch_size: card says 128, the script ran 64; following the script"
expect_status 0 "$row: the adopted card passes --strict" -- "$CCL_HARNESS" validate --strict "$SCRATCH/$row.yaml"
fixtures=tests/fixtures/adopt

# 10. Megatron-LM under `srun ... shifter bash -c '...'` (group 1, the contributor's own run.sh):
#     torchrun + pretrain_gpt.py inside the quoted script; the degrees, batch, length, steps and
#     the preprocessed --data-path become card fields, the architecture and optimizer launch.args.
row=llama_3.1_8b-megatron_lm-dp_2-tp_4-perlmutter-group_1
adopt_row "$row" run.sh
expect_adopted "$row" launch.dataset_path /scratch/datasets/processed/wikitext_llama_text_document_text_document
expect_adopted "$row" launch.steps 50
expect_rendered "$row" '^#SBATCH --nodes=2$'
expect_rendered "$row" '--tensor-model-parallel-size 4$'
expect_rendered "$row" '--global-batch-size 32$'
expect_rendered "$row" '--data-path /scratch/datasets/processed/wikitext_llama_text_document_text_document$'
expect_rendered "$row" '--tokenizer-model meta-llama/Llama-3.1-8B$'
expect_rendered "$row" '^add_args --num-query-groups$'
expect_rendered "$row" '^add_args --lr$'
expect_eq "$row: the architecture once, not per copy of the command" 1 "$(grep -c '^add_args --num-layers$' "$SCRATCH/$row.render/launch.sbatch")"
expect_status 0 "$row: -v" -- "$CCL_HARNESS" adopt -v "$fixtures/$row/$row.yaml" --script "$fixtures/$row/run.sh"
expect_output "the data path is the contributor's" "run.sh:139: --data-path /scratch/datasets/processed/wikitext_llama_text_document_text_document: the contributor's preprocessed PREFIX"

# 11. Bad input: one clear error, exit 2.
row=qwen3-4b-sglang-tp4-batch8-perlmutter
card="$fixtures/$row/$row.yaml"
expect_status 2 "a missing script" -- "$CCL_HARNESS" adopt "$card" --script "$SCRATCH/missing.sh"
expect_output "names it" "ccl-harness: error: $SCRATCH/missing.sh: cannot read"
printf 'echo hello\nls -l\n' >"$SCRATCH/notes.sh"
expect_status 2 "a script with no known command" -- "$CCL_HARNESS" adopt "$card" --script "$SCRATCH/notes.sh"
expect_output "says so" "ccl-harness: error: $SCRATCH/notes.sh: names no command adopt knows"
expect_status 2 "two scripts, neither with a known command" -- "$CCL_HARNESS" adopt "$card" --script "$SCRATCH/notes.sh" \
    --script "$SCRATCH/notes.sh"
expect_output "names both" "ccl-harness: error: $SCRATCH/notes.sh, $SCRATCH/notes.sh: name no command adopt knows"
printf '\x7fELF\x00\x01' >"$SCRATCH/binary"
expect_status 2 "a binary, not a script" -- "$CCL_HARNESS" adopt "$card" --script "$SCRATCH/binary"
expect_output "says so" "not a text file"
printf -- '- a\n- b\n' >"$SCRATCH/list.yaml"
expect_status 2 "a card that is not a card" -- "$CCL_HARNESS" adopt "$SCRATCH/list.yaml" --script "$fixtures/$row/run.sh"
expect_output "says so" "not a workload card"
expect_status 2 "no --script" -- "$CCL_HARNESS" adopt "$card"

finish
