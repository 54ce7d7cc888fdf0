#!/bin/bash
# SGLang online serving (issue 27 item 3), as the upstream CCL-Bench group 6 rows ran it: a serving
# card runs `python3 -m sglang.launch_server` in the background on the one-node slurm-local
# cluster and `python3 -m sglang.bench_serving --backend sglang` against it, through the Perlmutter
# template, with the image double of tests/doubles/images/sglang standing in for the container
# (launch.container.runtime none: its bin/ first on PATH, site/ on PYTHONPATH) and nsys's double
# from tests/doubles/tools/. The SGLang reference card, made a serving card with tp 2 x pp 2
# (bench_one_batch refuses pp; the server takes --pp-size), must end in a bundle verify accepts:
# every scheduler's Kineto trace under its canonical name, the client's JSONL result in logs/.
# Bad cases: an option launch_server does not know (refused by the job's preflight), a server that
# exits before its /health answers, and what strict planning refuses, naming the field.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
eval "$(bash clusters/slurm-local/cluster.sh env)"
if ! scontrol ping >/dev/null 2>&1; then
    echo "framework_sglang_serve: the slurm-local cluster is down (clusters/slurm-local/cluster.sh start): skipped"
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
    # Without the nsys double the card runs its torch.profiler server only.
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

card=workloads/deepseek-moe-16b-sglang-perlmutter/deepseek-moe-16b-sglang-perlmutter.yaml
src=$(source_repo sglang sglang-pin)
par=Model-executor.model_plan_parallelization
serving=(--set workload.model.phase=serving --set "$par.tp=2" --set "$par.pp=2"
    --set workload.data.num_prompts=12 --set workload.data.request_rate=40
    --set workload.data.input_len=64 --set workload.data.output_len=16 --set workload.data.seq_len=80)
serve=("${common[@]}" --set "launch.source.repo=$src" --set launch.source.ref=sglang-pin "${serving[@]}")

# 1. The serving card, as a user types it: tp 2 x pp 2 on the node's 4 GPUs.
expect_status 0 "SGLang serving card through slurm-local" -- in_image sglang "$CCL_HARNESS" run "$card" "${serve[@]}"
run=$(latest_run)
run=${run%/}
bundle="$run.tar.zst"
expect_status 0 "the SGLang serving bundle verifies" -- "$CCL_HARNESS" verify "$bundle"
expect_status 0 "its metrics" -- "$CCL_HARNESS" metrics "$bundle"
names=$(traces_in_bundle "$bundle")
for rank in 0 1 2 3; do
    grep -qx "kineto_trace_$rank.json.gz" <<<"$names" && pass || fail "SGLang scheduler rank $rank's trace: $names"
done
grep -q -- "-TP-" <<<"$names" && fail "a trace kept the scheduler's name: $names" || pass
tar --zstd -tf "$bundle" >"$SCRATCH/bundle.txt"
grep -q '/logs/bench_serve.json$' "$SCRATCH/bundle.txt" && pass || fail "the client's JSONL result is not in the bundle"
/usr/bin/python3 - "$run" <<'PY' && pass || fail "SGLang serving traces and result"
import gzip, json, sys
run = sys.argv[1]
for rank in range(4):
    d = json.load(gzip.open(f"{run}/traces/kineto_trace_{rank}.json.gz"))
    assert d["distributedInfo"]["rank"] == rank and d["distributedInfo"]["world_size"] == 4, d["distributedInfo"]
    passes = [e for e in d["traceEvents"] if e.get("cat") == "python_function"]
    # 12 requests in waves of --max-running-requests 8 (the card's batch): 2 x (1 prefill + 15 decodes)
    assert len(passes) == 2 * 16, len(passes)
lines = open(f"{run}/logs/bench_serve.json").read().splitlines()
assert len(lines) == 1, lines  # one JSON line, appended to a file the run directory did not have
r = json.loads(lines[0])
assert r["completed"] == 12 and r["random_input_len"] == 64 and r["random_output_len"] == 16, r
assert r["total_input_tokens"] == 12 * 64 and r["total_output_tokens"] == 12 * 16, r  # --random-range-ratio 1
assert all(k in r for k in ("mean_ttft_ms", "mean_tpot_ms", "p99_itl_ms", "request_throughput")), sorted(r)
PY
script="$run/rendered/launch.sbatch"
for want in 'python3 -m sglang.launch_server "${serve_args[@]}"' '--tp-size 2' '--pp-size 2' '--dp-size 1' \
    '--max-running-requests 8' '--num-prompts 12' '--request-rate 40' '--random-input-len 64' '--random-output-len 16' \
    '--trust-remote-code' 'export SGLANG_TORCH_PROFILER_DIR="$RUN_DIR/traces"'; do
    grep -qF -- "$want" "$script" && pass || fail "the serving script lacks $want"
done
grep -q "received signal 2" "$run/logs/server"*.log && pass || fail "the server was not stopped by SIGINT: $(tail -n 3 "$run"/logs/server*.log)"
expect_status 0 "explain says why the card is served" -- "$CCL_HARNESS" explain "$card" --cluster "$cluster" "${serving[@]}"
expect_output "the reason names the phase" "serving: sglang.launch_server, then sglang.bench_serving against it"
if [ ${#tools[@]} -gt 0 ]; then
    # json and nsys: two servers one after the other (CUPTI takes one subscriber).
    grep -qx "nsys_0.nsys-rep" <<<"$names" && pass || fail "the nsys pass's report, written after SIGINT: $names"
    grep -qx "nsys_0.sqlite" <<<"$names" && pass || fail "the nsys pass's SQLite export: $names"
    for log in server_profile.log client_profile.log bench_serve_profile.json server.log client.log bench_serve.json; do
        [ -s "$run/logs/$log" ] && pass || fail "two-pass serving: no logs/$log ($(ls "$run/logs"))"
    done
fi

# 2. A group 6 card of the corpus as its contributor wrote it (nsys, the bench_serving JSONL),
#    with what a user adds on the command line.
group6="$CORPUS/trace_collection_bad/llama-3.1-8b-sglang-tp_2-pp_2-perlmutter-group_6/llama-3.1-8b-sglang-tp_2-pp_2-perlmutter-group_6.yaml"
if [ -f "$group6" ]; then
    image="lmsysorg/sglang@sha256:$(printf 'a%.0s' $(seq 64))"
    expect_status 0 "a group 6 card validates --strict" -- "$CCL_HARNESS" validate --strict "$group6" \
        --set launch.account=m1 --set "launch.container.image=$image"
    expect_status 0 "and renders the server with its tp and pp" -- "$CCL_HARNESS" render "$group6" --out "$SCRATCH/group6" \
        --set launch.account=m1 --set "launch.container.image=$image"
    grep -qF -- "--pp-size 2" "$SCRATCH/group6/launch.sbatch" && pass || fail "the group 6 card's --pp-size"
    grep -qF -- "--max-running-requests 4" "$SCRATCH/group6/launch.sbatch" && pass || fail "the group 6 card's batch"
fi

# 3. Bad cases. An option launch_server's parser does not know stops the job in its preflight,
#    before the server starts, naming it...
expect_status 1 "launch_server refuses an unknown option" -- in_image sglang "$CCL_HARNESS" run "$card" "${serve[@]}" \
    --set 'launch.args=[--no-such-option]'
run=$(latest_run)
grep -q -- "--no-such-option is not an option" "$run/run.json" && pass || fail "the run's reason lacks the preflight's words"
[ -e "$run/logs/server.log" ] || [ -e "$run/logs/server_profile.log" ] && fail "the server started after a failed preflight" || pass
# ...a server that exits while loading fails the job at once, saying so, and no client runs...
started=$SECONDS
expect_status 1 "a server that exits before /health" -- in_image sglang env CCL_DOUBLE_SGLANG_EXIT_BEFORE_HEALTH=1 \
    "$CCL_HARNESS" run "$card" "${serve[@]}"
[ $((SECONDS - started)) -lt 240 ] && pass || fail "the dead server took $((SECONDS - started))s to fail"
run=$(latest_run)
grep -rqs "exited (status 1) before its /health answered" "$run" && pass || fail "the job does not say why: $(ls "$run/logs")"
grep -rqs "Rank 0 scheduler is dead" "$run/logs" && pass || fail "the server's own last words are not kept"
ls "$run"/logs/client*.log >/dev/null 2>&1 && fail "the client ran against a dead server" || pass
[ -e "$run/logs/bench_serve.json" ] && fail "a result was written for a run that served nothing" || pass
# ...each double refuses what its real parser refuses, and lists every contract option in --help...
contract=$(ls docs/contracts/sglang-*.yaml)
double() { # double MODULE ARGS...: python3 -m sglang.MODULE ARGS... in the image double
    local module=$1
    shift
    (cd "$SCRATCH" && PYTHONPATH="$doubles/images/sglang/site" "$doubles/images/sglang/bin/python3" -m "sglang.$module" "$@")
}
for module in launch_server bench_serving; do
    expect_status 2 "$module refuses an unknown option" -- double "$module" --no-such-option
    expect_output "argparse's message" "$module.py: error: unrecognized arguments: --no-such-option"
    expect_status 0 "$module --help" -- double "$module" --help
    missing=()
    while read -r name; do
        grep -qE -- "^  ${name}( |,|$)" <<<"$OUT" || missing+=("$name")
    done < <(/usr/bin/python3 -c 'import sys, yaml; [print(o["name"]) for o in yaml.safe_load(open(sys.argv[1]))[sys.argv[2]]["options"]]' \
        "$contract" "$module")
    [ ${#missing[@]} -eq 0 ] && pass || fail "$module --help lacks ${missing[*]}"
done
expect_status 2 "launch_server requires --model-path" -- double launch_server --tp-size 2
expect_output "as ServerArgs.model_path has no default" "the following arguments are required: --model-path"
expect_status 2 "bench_serving refuses a dataset outside its choices" -- double bench_serving --dataset-name wikitext
expect_output "argparse's message" "argument --dataset-name: invalid choice: 'wikitext'"
# ...and strict planning refuses what the server cannot run, naming the field.
strict=(validate --strict "$card" --cluster "$cluster" "${serving[@]}")
expect_status 0 "the serving card validates --strict" -- "$CCL_HARNESS" "${strict[@]}"
expect_status 2 "a request rate of 0" -- "$CCL_HARNESS" "${strict[@]}" --set workload.data.request_rate=0
expect_output "names the field" "workload.data.request_rate"
expect_status 2 "a dataset bench_serving's random prompts are not" -- "$CCL_HARNESS" "${strict[@]}" \
    --set workload.data.dataset=sharegpt
expect_output "names the dataset field" "workload.data.dataset"
expect_status 2 "pp 2 for bench_one_batch (an inference card)" -- "$CCL_HARNESS" validate --strict "$card" \
    --cluster "$cluster" "${serving[@]}" --set workload.model.phase=inference
expect_output "names the pp field" "model_plan_parallelization.pp"
expect_status 0 "launch.args are checked against launch_server's options" -- "$CCL_HARNESS" "${strict[@]}" \
    --set 'launch.args=[--max-running-request, "8"]'
expect_output "a near miss is named" 'did you mean "--max-running-requests"?'
finish
