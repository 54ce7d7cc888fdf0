#!/bin/bash
# The serving engines' reference cards (vLLM bench latency, SGLang bench_one_batch) run through
# the Perlmutter templates on the one-node slurm-local cluster, with the engine doubles of
# tests/doubles/images/ standing in for the container images (their bin/ first on PATH, site/ on
# PYTHONPATH: launch.container.runtime none, the node runs them) and nsys's double from
# tests/doubles/tools/ where the Containerfile would install the real one. Both cards are already
# one node × 4 GPUs (tp 4); the SGLang card says ep 1 because SGLang's DeepSeek-MoE (v1)
# model ignores --ep-size (validate --strict refuses ep 4 for it). launch.source points at local
# git repositories (the engines run from their images; the source is provenance).
# Each run must end in a bundle verify accepts with every traced rank's Kineto trace under its
# canonical name: vLLM's 4 workers, SGLang's rank 0 (the only rank its bench profiles).
# Bad case: an option the engine's parser does not know, in launch.args, fails the run.
# vLLM online serving (section 5): the Mixtral card's vllm serve + vllm bench serve through the
# same cluster, a ShareGPT file, what strict planning refuses, and a server that never comes up.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
eval "$(bash clusters/slurm-local/cluster.sh env)"
if ! scontrol ping >/dev/null 2>&1; then
    echo "framework_serving: the slurm-local cluster is down (clusters/slurm-local/cluster.sh start): skipped"
    exit 125
fi
doubles="$CCL_SOURCE_DIR/tests/doubles"
results="$SCRATCH/results"
cluster=tests/e2e/fixtures/perlmutter-on-slurm-local.yaml
common=(--cluster "$cluster" --results "$results" --git-cache "$SCRATCH/git-cache" --set launch.container.runtime=none)
tools=()
if [ -x "$doubles/tools/nsys" ]; then
    tools=("$doubles/tools")
else
    # Without the nsys double the cards run their torch.profiler pass and the timed pass only.
    common+=(--set 'metric_source.traces=[json]')
fi

source_repo() { # source_repo NAME TAG: a local repository of tests/doubles/NAME tagged TAG
    local repo="$SCRATCH/src-$1"
    git init --quiet -b main "$repo"
    cp -r "$doubles/$1/." "$repo/"
    git -C "$repo" add -A
    git -C "$repo" -c user.name=Test -c user.email=test@example.invalid commit --quiet -m "$1 stand-in"
    git -C "$repo" tag "$2"
    echo "$repo"
}
in_image() { # in_image IMAGE COMMAND...: runs COMMAND with the image double's bin/ and site/
    local image="$doubles/images/$1"
    shift
    PATH="$image/bin:$(IFS=:; echo "${tools[*]:-}"):$PATH" PYTHONPATH="$image/site" "$@"
}
traces_in_bundle() { # traces_in_bundle BUNDLE: the bundle's top-level file names
    tar --zstd -tf "$1" | sed -n 's|^[^/]*/||p' | grep -v / | sort
}

# 1. vLLM: pass 1 traces batch wait+warmup+1 on every worker, pass 2 times the batches.
vllm_src=$(source_repo vllm v0.19.0)
card=workloads/qwen3-4b-vllm-perlmutter/qwen3-4b-vllm-perlmutter.yaml
expect_status 0 "vLLM card through slurm-local" -- in_image vllm-openai "$CCL_HARNESS" run "$card" "${common[@]}" \
    --set "launch.source.repo=$vllm_src"
run=$(latest_run)
run=${run%/}
bundle="$run.tar.zst"
expect_status 0 "the vLLM bundle verifies" -- "$CCL_HARNESS" verify "$bundle"
expect_metrics "$bundle" # every metric, none n/a
names=$(traces_in_bundle "$bundle")
for rank in 0 1 2 3; do
    grep -qx "kineto_trace_$rank.json.gz" <<<"$names" && pass || fail "vLLM rank $rank's trace: $names"
done
grep -q "pt.trace.json" <<<"$names" && fail "a vLLM trace kept its handler name: $names" || pass
/usr/bin/python3 - "$run/traces" <<'EOF' && pass || fail "vLLM traces' contents"
import gzip, json, sys
for rank in range(4):
    d = json.load(gzip.open(f"{sys.argv[1]}/kineto_trace_{rank}.json.gz"))
    assert d["distributedInfo"]["rank"] == rank and d["distributedInfo"]["world_size"] == 4, d["distributedInfo"]
    steps = [e["name"] for e in d["traceEvents"] if e["name"].startswith("execute_context_")]
    assert len(steps) == 128, len(steps)  # one batch: 1 prefill + 127 decodes (output_len 128)
EOF
[ -s "$run/logs/bench.latency.json" ] && pass || fail "the timed pass wrote no bench.latency.json"
# ...under the name mfu.py globs (*.latency.json), so mfu takes the timed batch, not a trace step.
expect_status 0 "vLLM metrics" -- "$CCL_HARNESS" metrics "$bundle"
expect_output "mfu from the timed pass's latency" "(avg_latency of bench.latency.json)"
script="$run/rendered/launch.sbatch"
[ "$(grep -v '^ *#' "$script" | grep -c -- '--output-json')" -eq 1 ] && pass || fail "--output-json once, in the timed pass"
grep -q -- '--num-iters-warmup 5' "$script" && pass || fail "warm-up batches = wait + warmup"
grep -q -- '--dtype bfloat16' "$script" && pass || fail "precision bf16 -> --dtype bfloat16"
if [ ${#tools[@]} -gt 0 ]; then
    grep -qx "nsys_0.nsys-rep" <<<"$names" && pass || fail "the nsys pass's report: $names"
fi

# 2. SGLang: rank 0 traces decode step 0 (step W+1 = 2 of the batch: step 1 is the prefill).
sglang_src=$(source_repo sglang sglang-pin)
card=workloads/deepseek-moe-16b-sglang-perlmutter/deepseek-moe-16b-sglang-perlmutter.yaml
sglang=(--set "launch.source.repo=$sglang_src" --set launch.source.ref=sglang-pin)
expect_status 0 "SGLang card through slurm-local" -- in_image sglang "$CCL_HARNESS" run "$card" "${common[@]}" "${sglang[@]}"
run=$(latest_run)
run=${run%/}
bundle="$run.tar.zst"
expect_status 0 "the SGLang bundle verifies" -- "$CCL_HARNESS" verify "$bundle"
# bench_one_batch profiles TP rank 0 alone: one rank has no straggler; and from mid-decode
# (--profile-start-step), so no prefill pass gives a first token.
expect_metrics "$bundle" "straggler=one rank" "ttft=the traces start at a decode pass"
names=$(traces_in_bundle "$bundle")
grep -qx "kineto_trace_0.json.gz" <<<"$names" && pass || fail "SGLang rank 0's trace: $names"
grep -q "_decode.trace.json" <<<"$names" && fail "the SGLang trace kept its bench name: $names" || pass
/usr/bin/python3 - "$run/traces/kineto_trace_0.json.gz" <<'EOF' && pass || fail "SGLang trace's contents"
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
steps = [e["args"]["bench_step"] for e in d["traceEvents"] if e.get("cat") == "python_function"]
assert d["distributedInfo"]["rank"] == 0 and steps == [2], (d["distributedInfo"], steps)
EOF
[ -s "$run/logs/bench_one_batch.jsonl" ] && pass || fail "the timed pass wrote no results"

# 3. Bad cases: the engine's parser refuses an option it does not know, and the run fails.
expect_status 1 "vLLM refuses an unknown option" -- in_image vllm-openai "$CCL_HARNESS" run \
    workloads/qwen3-4b-vllm-perlmutter/qwen3-4b-vllm-perlmutter.yaml "${common[@]}" \
    --set "launch.source.repo=$vllm_src" --set 'launch.args=[--no-such-option]'
# Refused by the job's preflight (ccl_preflight.py asks the engine for its --help), in seconds,
# before the engine starts: its log names the option, the run's reason quotes it.
refused_by_preflight() { # refused_by_preflight WHAT
    local run
    run=$(latest_run)
    grep -q -- "--no-such-option is not an option" "$run/logs/preflight.log" && pass || fail "$1: the preflight did not name the option"
    ls "$run"/logs/engine*.log >/dev/null 2>&1 && fail "$1: the engine started after a failed preflight" || pass
    grep -q -- "--no-such-option is not an option" "$run/run.json" && pass || fail "$1: the run's reason lacks the preflight's words"
}
refused_by_preflight vLLM
expect_status 1 "SGLang refuses an unknown option" -- in_image sglang "$CCL_HARNESS" run "$card" "${common[@]}" \
    "${sglang[@]}" --set 'launch.args=[--no-such-option]'
refused_by_preflight SGLang
# ...and strict planning refuses what the engines cannot run, naming the field.
expect_status 2 "SGLang DeepSeek-MoE v1 with ep 4" -- "$CCL_HARNESS" validate --strict "$card" --cluster "$cluster" \
    --set Model-executor.model_plan_parallelization.ep=4
expect_output "the ep field is named" "model_plan_parallelization.ep"

# 4. In its image, the Perlmutter way (the podman-hpc double): the harness builds and migrates the
#    image on the submitting host, then runs the job's own preflight in it before sbatch, so an
#    option the image's engine lacks never queues. torch.profiler only: the real image gets nsys
#    from the rendered Containerfile, which the double does not run.
(
    export PATH="$doubles/podman-hpc:$PATH" CCL_PODMAN_HPC_STATE="$SCRATCH/podman-hpc"
    image_of=(--cluster "$cluster" "${sglang[@]}" --set launch.container.runtime=podman-hpc --set 'metric_source.traces=[json]')
    in_podman=("${image_of[@]}" --results "$results/podman" --git-cache "$SCRATCH/git-cache")
    expect_status 0 "SGLang dry run before its image is built" -- "$CCL_HARNESS" run "$card" "${in_podman[@]}" --dry-run
    expect_output "says the preflight waits for the image" "preflight: not checked here: the image localhost/ccl-sglang:"
    expect_status 0 "ccl-harness build the SGLang image" -- "$CCL_HARNESS" build "$card" "${image_of[@]}"
    expect_status 0 "SGLang dry run with its image built" -- "$CCL_HARNESS" run "$card" "${in_podman[@]}" --dry-run
    expect_output "runs the preflight in the image" "preflight: passed in localhost/ccl-sglang:"
    expect_output "with the engine's options counted" "options and keys found in python3 -m sglang.bench_one_batch --help"
    expect_status 1 "an option the image's engine lacks is refused before sbatch" -- "$CCL_HARNESS" run "$card" \
        "${in_podman[@]}" --set 'launch.args=[--trust-remote-code, --no-such-option]'
    expect_output "naming it" "--no-such-option is not an option"
    run=$(ls -dt "$results"/podman/*/ | head -n 1)
    expect_json "$run/run.json" 'j["state"]' failed
    expect_json "$run/run.json" 'j["job_ids"]' "[]" "nothing was submitted"
    expect_json "$run/run.json" '"preflight in localhost/ccl-sglang:" in j["reason"]' True
    expect_status 0 "the SGLang card in its image" -- "$CCL_HARNESS" run "$card" "${in_podman[@]}"
    run=$(ls -dt "$results"/podman/*/ | head -n 1)
    expect_json "$run/run.json" 'j["state"]' completed
    grep -q "preflight: sglang" "$run/rendered/logs/preflight.log" "$run/logs/preflight.log" 2>/dev/null && pass ||
        fail "the job's own preflight left no log: $(ls "$run/logs")"
    expect_status 0 "its bundle verifies" -- "$CCL_HARNESS" verify "${run%/}.tar.zst"
    expect_metrics "${run%/}.tar.zst" "straggler=one rank" "ttft=the traces start at a decode pass"
    echo "$checks $failures" >"$SCRATCH/podman.counts"
)
read -r checks failures <"$SCRATCH/podman.counts"

# 5. vLLM online serving (issue 27): the Mixtral card runs `vllm serve` (dp 4, expert parallel) in
#    the background and `vllm bench serve` against it; the server's 4 workers trace the client's
#    /start_profile.../stop_profile window, the client's result JSON stays in logs/.
serve_card=workloads/mixtral-8x7b-vllm-serve-perlmutter/mixtral-8x7b-vllm-serve-perlmutter.yaml
serve=("${common[@]}" --set "launch.source.repo=$vllm_src" --set 'metric_source.traces=[json]')
expect_status 0 "vLLM serving card through slurm-local" -- in_image vllm-openai "$CCL_HARNESS" run "$serve_card" "${serve[@]}"
run=$(latest_run)
run=${run%/}
expect_status 0 "the vLLM serving bundle verifies" -- "$CCL_HARNESS" verify "$run.tar.zst"
expect_metrics "$run.tar.zst"
names=$(traces_in_bundle "$run.tar.zst")
for rank in 0 1 2 3; do
    grep -qx "kineto_trace_$rank.json.gz" <<<"$names" && pass || fail "vLLM serve rank $rank's trace: $names"
done
# Listed whole first: grep -q stopping early would leave tar to die of SIGPIPE under pipefail.
tar --zstd -tf "$run.tar.zst" >"$SCRATCH/serve-bundle.txt"
grep -q '/logs/bench_serve.json$' "$SCRATCH/serve-bundle.txt" && pass || fail "the client's result JSON is not in the bundle"
/usr/bin/python3 - "$run" <<'EOF2' && pass || fail "vLLM serve traces and result"
import gzip, json, sys
run = sys.argv[1]
for rank in range(4):
    d = json.load(gzip.open(f"{run}/traces/kineto_trace_{rank}.json.gz"))
    assert d["distributedInfo"]["rank"] == rank and d["distributedInfo"]["world_size"] == 4, d["distributedInfo"]
    steps = [e["name"] for e in d["traceEvents"] if e["name"].startswith("execute_context_")]
    assert len(steps) == 2 * 128, len(steps)  # 64 requests in waves of max-num-seqs 32, 128 tokens each
r = json.load(open(f"{run}/logs/bench_serve.json"))
assert r["completed"] == 64 and r["failed"] == 0, (r["completed"], r["failed"])
assert r["request_rate"] == 8 and all(k in r for k in ("mean_ttft_ms", "mean_tpot_ms", "p99_itl_ms")), sorted(r)
EOF2
script="$run/rendered/launch.sbatch"
for want in '--data-parallel-size 4' '--enable-expert-parallel' '--max-num-seqs 32' '--max-num-batched-tokens 8192' \
    '--max-model-len 4096' '--num-prompts 64' '--request-rate 8' '--random-input-len 1024' '--enforce-eager'; do
    grep -q -- "$want" "$script" && pass || fail "the serving script lacks $want"
done
grep -q "shutting down" "$run/logs/server.log" && pass || fail "the server was not stopped by a signal: $(tail -n 3 "$run/logs/server.log")"

# A ShareGPT card reads the file launch.dataset_path names (linked into the run for the container).
printf '%s' '[{"conversations": [{"from": "human", "value": "Hello there"}, {"from": "gpt", "value": "Hi, how can I help"}]},
 {"conversations": [{"from": "human", "value": "Tell me a joke"}, {"from": "gpt", "value": "No"}]}]' >"$SCRATCH/sharegpt.json"
sharegpt=(--set workload.data.dataset=ShareGPT_V3_unfiltered_cleaned_split --set workload.data.num_prompts=8)
expect_status 0 "vLLM serving a ShareGPT file" -- in_image vllm-openai "$CCL_HARNESS" run "$serve_card" "${serve[@]}" \
    "${sharegpt[@]}" --set "launch.dataset_path=$SCRATCH/sharegpt.json"
run=$(latest_run)
expect_json "$run/logs/bench_serve.json" 'j["completed"]' 8 "the ShareGPT prompts, oversampled to num_prompts"
grep -q -- '--dataset-name sharegpt' "$run/rendered/launch.sbatch" && pass || fail "ShareGPT -> --dataset-name sharegpt"

# The corpus's ShareGPT rows name the public file and no path: the job fetches it once into the
# cache under HF_HOME (shared) and reuses it. Here the cache already holds it (no network).
hf_cache="$SCRATCH/hf"
mkdir -p "$hf_cache/ccl-harness/datasets"
cp "$SCRATCH/sharegpt.json" "$hf_cache/ccl-harness/datasets/ShareGPT_V3_unfiltered_cleaned_split.json"
expect_status 0 "a ShareGPT card without launch.dataset_path reads the cached public file" -- in_image vllm-openai \
    "$CCL_HARNESS" run "$serve_card" "${serve[@]}" "${sharegpt[@]}" --set "launch.env.HF_HOME=$hf_cache"
run=$(latest_run)
expect_json "$run/logs/bench_serve.json" 'j["completed"]' 8 "the cached ShareGPT prompts"
grep -q "dataset: $hf_cache/ccl-harness/datasets/ShareGPT_V3_unfiltered_cleaned_split.json (cached)" "$run"/logs/* &&
    pass || fail "the job does not say it used the cached file: $(tail -n 5 "$run"/logs/*.out 2>&1)"
expect_eq "the dataset's sha256 is recorded" "$(sha256sum <"$SCRATCH/sharegpt.json" | cut -d' ' -f1)" \
    "$(cut -d' ' -f1 "$run/logs/dataset.sha256" 2>&1)"
# An empty cache and no way out (a proxy nobody listens on): the job fails saying what to set, and
# leaves no partial file under the name the next job would trust.
expect_status 1 "an unreachable download fails the run" -- in_image vllm-openai "$CCL_HARNESS" run "$serve_card" \
    "${serve[@]}" "${sharegpt[@]}" --set "launch.env.HF_HOME=$SCRATCH/hf-empty" \
    --set launch.env.https_proxy=http://127.0.0.1:9 --set launch.env.HTTPS_PROXY=http://127.0.0.1:9
run=$(latest_run)
grep -q "could not download https://huggingface.co/datasets/anon8231489123/ShareGPT_Vicuna_unfiltered/" "$run"/logs/* "$run/run.json" &&
    pass || fail "the failed download is not said: $(tail -n 5 "$run"/logs/*.out 2>&1)"
expect_eq "no partial dataset file" "" "$(find "$SCRATCH/hf-empty" -type f 2>/dev/null)"

# The group 9 rows' wikitext (their run_script.py: WikiText-2's test rows, stripped, those over 20
# characters, as chat prompts): the job writes them once as custom JSONL into the cache under
# HF_HOME through the image's `datasets` (tests/doubles/hf-datasets), and serves them.
wiki=(--set workload.data.dataset=wikitext --set workload.data.num_prompts=8 --set workload.data.output_len=16)
with_datasets() { in_image vllm-openai env PYTHONPATH="$doubles/images/vllm-openai/site:$CCL_SOURCE_DIR/tests/doubles/hf-datasets" "$@"; }
prompts="$SCRATCH/hf-wiki/ccl-harness/datasets/wikitext-2-raw-v1-test-prompts.jsonl"
expect_status 0 "vLLM serving WikiText prompts the job writes" -- with_datasets "$CCL_HARNESS" run "$serve_card" "${serve[@]}" \
    "${wiki[@]}" --set "launch.env.HF_HOME=$SCRATCH/hf-wiki"
run=$(latest_run)
expect_json "$run/logs/bench_serve.json" 'j["completed"]' 8 "the WikiText prompts"
for want in '--dataset-name custom' 'output_len_option=--custom-output-len' '("$output_len_option" 16)' \
    '--split test --key prompt --strip --min-chars 21'; do
    grep -q -- "$want" "$run/rendered/launch.sbatch" && pass || fail "the WikiText serving script lacks $want"
done
/usr/bin/python3 - "$prompts" <<'EOF2' && pass || fail "the prompts file: $(head -c 300 "$prompts" 2>&1)"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
assert len(rows) == 31, len(rows)  # WikiText-2 in the double: 30 paragraphs and a heading (28 characters stripped)
assert all(set(r) == {"prompt"} and len(r["prompt"]) > 20 and r["prompt"] == r["prompt"].strip() for r in rows), rows[:2]
EOF2
expect_eq "the prompts' sha256 is recorded" "$(sha256sum <"$prompts" | cut -d' ' -f1)" "$(cut -d' ' -f1 "$run/logs/dataset.sha256" 2>&1)"
expect_status 0 "a second WikiText run reuses the prompts" -- with_datasets env CCL_DOUBLE_HF_OFFLINE=1 "$CCL_HARNESS" run \
    "$serve_card" "${serve[@]}" "${wiki[@]}" --set "launch.env.HF_HOME=$SCRATCH/hf-wiki"
run=$(latest_run)
grep -q "dataset: $prompts (cached)" "$run"/logs/* && pass || fail "not reused: $(tail -n 5 "$run"/logs/*.out 2>&1)"
expect_status 1 "an unreachable Hub fails the WikiText run" -- with_datasets env CCL_DOUBLE_HF_OFFLINE=1 "$CCL_HARNESS" run \
    "$serve_card" "${serve[@]}" "${wiki[@]}" --set "launch.env.HF_HOME=$SCRATCH/hf-wiki-offline"
run=$(latest_run)
grep -q "could not write the prompts of Salesforce/wikitext wikitext-2-raw-v1" "$run"/logs/* "$run/run.json" &&
    pass || fail "the failure is not said: $(tail -n 5 "$run"/logs/*.out 2>&1)"
expect_eq "no partial prompts file" "" "$(find "$SCRATCH/hf-wiki-offline" -type f 2>/dev/null)"

# Both tracers: two servers one after the other (CUPTI takes one subscriber), the torch.profiler
# pass first, then the Nsight Systems pass, stopped by SIGINT, whose report nsys still writes.
if [ ${#tools[@]} -gt 0 ]; then
    expect_status 0 "vLLM serving with json and nsys" -- in_image vllm-openai "$CCL_HARNESS" run "$serve_card" "${common[@]}" \
        --set "launch.source.repo=$vllm_src" --set 'metric_source.traces=[json, nsys]'
    run=$(latest_run)
    run=${run%/}
    expect_status 0 "the two-pass serving bundle verifies" -- "$CCL_HARNESS" verify "$run.tar.zst"
    names=$(traces_in_bundle "$run.tar.zst")
    grep -qx "kineto_trace_3.json.gz" <<<"$names" && pass || fail "the torch.profiler pass's traces: $names"
    grep -qx "nsys_0.nsys-rep" <<<"$names" && pass || fail "the nsys pass's report, written after SIGINT: $names"
    grep -qx "nsys_0.sqlite" <<<"$names" && pass || fail "the nsys pass's SQLite export: $names"
    for log in server_profile.log client_profile.log bench_serve_profile.json server.log client.log bench_serve.json; do
        [ -s "$run/logs/$log" ] && pass || fail "two-pass serving: no logs/$log ($(ls "$run/logs"))"
    done
fi

# Strict planning says what a serving card lacks, naming the field.
strict=(validate --strict "$serve_card" --cluster "$cluster")
expect_status 0 "the public ShareGPT file needs no launch.dataset_path" -- "$CCL_HARNESS" "${strict[@]}" "${sharegpt[@]}"
expect_status 2 "a ShareGPT file of one's own does" -- "$CCL_HARNESS" "${strict[@]}" \
    --set workload.data.dataset=sharegpt_filtered_mine
expect_output "names launch.dataset_path" "launch.dataset_path: not set"
expect_output "and the public file it could name" "dataset: ShareGPT_V3_unfiltered_cleaned_split.json"
expect_status 2 "c4 is no dataset vllm bench serve reads" -- "$CCL_HARNESS" "${strict[@]}" \
    --set workload.data.dataset=c4
expect_output "names the dataset field" "workload.data.dataset"
expect_output "and the one it writes itself" "the job writes only WikiText as custom prompts itself"
expect_status 0 "WikiText needs no launch.dataset_path" -- "$CCL_HARNESS" "${strict[@]}" --set workload.data.dataset=WikiText-2
expect_status 2 "ep 2 with tp 1 x dp 4" -- "$CCL_HARNESS" "${strict[@]}" \
    --set Model-executor.model_plan_parallelization.ep=2
expect_output "names the ep field" "model_plan_parallelization.ep"
expect_status 0 "launch.args are checked against vllm serve's options" -- "$CCL_HARNESS" "${strict[@]}" \
    --set 'launch.args=[--max-num-seq, "8"]'
expect_output "a near miss is named" 'did you mean "--max-num-seqs"?'
expect_status 0 "a ShareGPT inference card is served, and says why" -- "$CCL_HARNESS" explain "$serve_card" \
    --cluster "$cluster" "${sharegpt[@]}" --set workload.model.phase=inference --set "launch.dataset_path=$SCRATCH/sharegpt.json"
expect_output "the reason names the dataset" "is read by vllm bench serve"

# Bad cases: an option vllm serve does not know stops the job in its preflight...
expect_status 1 "vllm serve refuses an unknown option" -- in_image vllm-openai "$CCL_HARNESS" run "$serve_card" \
    "${serve[@]}" --set 'launch.args=[--no-such-option]'
refused_by_preflight "vLLM serve"
[ -e "$(latest_run)/logs/server.log" ] && fail "the server started after a failed preflight" || pass
# ...and a server that never answers /health fails the job in bounded time, saying so.
started=$SECONDS
expect_status 1 "a server that never becomes healthy" -- in_image vllm-openai \
    env CCL_DOUBLE_VLLM_NEVER_HEALTHY=1 CCL_SERVE_HEALTH_TIMEOUT=10 "$CCL_HARNESS" run "$serve_card" "${serve[@]}"
[ $((SECONDS - started)) -lt 240 ] && pass || fail "the unhealthy server took $((SECONDS - started))s to fail"
run=$(latest_run)
grep -rqs "did not answer /health" "$run" && pass || fail "the unhealthy server's job does not say why: $(ls "$run/logs")"
[ -e "$run/logs/client.log" ] && fail "the client ran against an unhealthy server" || pass
finish
