#!/bin/bash
# `ccl-harness ingest` end to end on the layouts real tools write: torch.profiler's own output
# (Debian's python3-torch: export_chrome_trace under TorchTitan's rank<r>_trace.json, the
# tensorboard handler's <host>_<pid>.<ns>.pt.trace.json[.gz]), one gzip'd by hand, and the real
# public Kineto traces of tests/fixtures/real_traces under the tensorboard handler's names (rank from
# distributedInfo). Each bundle verifies as "valid, unpinned, ingested", metrics reads every rank,
# reproduce refuses it; bad input is one clear error and leaves nothing under results/.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ingest_lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"
export TMPDIR="$SCRATCH/tmp"
mkdir -p "$TMPDIR"
real="$CCL_SOURCE_DIR/tests/fixtures/real_traces"

provenance() { # provenance BUNDLE EXPR: EXPR over the bundle's provenance.json (as p)
    local name
    name=$(basename "$1" .tar.zst)
    tar --zstd -xOf "$1" "$name/provenance.json" | /usr/bin/python3 -c 'import json,sys; p=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"
}

# A 2-rank card (tiny-ddp's fields) and a 1-rank one.
card="$SCRATCH/handmade.yaml"
cp workloads/tiny-ddp/tiny-ddp.yaml "$card"
single="$SCRATCH/single.yaml"
sed -e 's/total_count: 2/total_count: 1/' -e 's/count_per_node: 2/count_per_node: 1/' -e 's/dp_replicate: 2/dp_replicate: 1/' \
    workloads/tiny-ddp/tiny-ddp.yaml >"$single"

# Real torch.profiler output: 2 gloo ranks on CPU, each through the tensorboard handler (rank 1 with
# use_gzip) and export_chrome_trace. Debian's torch has no Kineto: the legacy autograd form.
job="$SCRATCH/job"
mkdir -p "$job/scripts" "$job/logs"
cat >"$job/scripts/train.py" <<'EOF'
import os, sys
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.profiler import profile, schedule, tensorboard_trace_handler, ProfilerActivity

def work(rank, world, out, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", port
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model, x = torch.nn.Linear(64, 64), torch.randn(8, 64)
    def steps(p):
        for _ in range(3):
            model(x).sum().backward()
            dist.all_reduce(model.weight.grad)
            p.step()
    window = schedule(wait=0, warmup=1, active=2, repeat=1)
    handler = tensorboard_trace_handler(os.path.join(out, "tb"), use_gzip=(rank == 1))
    with profile(activities=[ProfilerActivity.CPU], schedule=window, on_trace_ready=handler) as p:
        steps(p)
    with profile(activities=[ProfilerActivity.CPU], schedule=window) as p:
        steps(p)
    os.makedirs(os.path.join(out, "chrome"), exist_ok=True)
    p.export_chrome_trace(os.path.join(out, "chrome", f"rank{rank}_trace.json"))
    print(f"rank {rank} done", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(work, args=(2, sys.argv[1], sys.argv[2]), nprocs=2)
EOF
port=$((20000 + RANDOM % 20000))
if ! /usr/bin/python3 "$job/scripts/train.py" "$job/out" "$port" >"$job/logs/job.log" 2>&1; then
    cat "$job/logs/job.log" >&2
    echo "SKIP: /usr/bin/python3 with torch (Debian python3-torch) could not run the job" >&2
    exit 125
fi
ls "$job/out/tb"/*.pt.trace.json >/dev/null 2>&1 && ls "$job/out/tb"/*.pt.trace.json.gz >/dev/null 2>&1 && pass ||
    fail "the tensorboard handler wrote no <worker>.<ns>.pt.trace.json and .json.gz"

# 1. torch.profiler rank<r>_trace.json, one gzip'd by hand, with the scripts and logs that ran.
traces="$SCRATCH/chrome"
mkdir -p "$traces"
cp "$job/out/chrome/rank0_trace.json" "$traces/"
gzip -n -c "$job/out/chrome/rank1_trace.json" >"$traces/rank1_trace.json.gz"
cp "$card" "$traces/card.yaml" # an archived data point keeps its card beside the traces
expect_status 0 "ingest rank<r>_trace.json(.gz)" -- "$CCL_HARNESS" ingest "$card" "$traces" --scripts "$job/scripts" \
    --logs "$job/logs" --results "$results"
expect_output "names rank 0" "kineto_trace_0.json <- rank0_trace.json"
expect_output "a gzip'd legacy trace is normalized" "kineto_trace_1.json <- rank1_trace.json.gz"
expect_output "the card beside the traces is left out, said so" "card.yaml: not a trace"
expect_output "says unpinned, ingested" "valid, unpinned, ingested"
chrome=$(bundle_of)
[ -f "$chrome" ] && pass || fail "ingest printed no bundle"
expect_status 0 "verify the ingested bundle" -- "$CCL_HARNESS" verify "$chrome"
expect_output "verify: unpinned, ingested" "valid, unpinned, ingested (8 files, 2 traces"
"$CCL_HARNESS" verify --json "$chrome" >"$SCRATCH/verify.json" || fail "verify --json"
expect_json "$SCRATCH/verify.json" "j['provenance'], j['valid']" "('unpinned, ingested', True)"
expect_eq "origin" "ingested" "$(provenance "$chrome" "p['origin']")"
expect_eq "no harness pin, hosts unknown" "(None, False, None, None)" \
    "$(provenance "$chrome" "p['harness']['commit'], p['harness']['dirty'], p['hosts'], p['run']['cluster']")"
expect_eq "the inputs pinned by sha256" "$(sha256sum "$card" | cut -d' ' -f1)" \
    "$(provenance "$chrome" "[i['sha256'] for i in p['inputs'] if i['path'].endswith('handmade.yaml')][0]")"
expect_eq "every file given is an input" "5" "$(provenance "$chrome" "len(p['inputs'])")"
name=$(basename "$chrome" .tar.zst)
listing=$(tar --zstd -tf "$chrome")
for want in "$name/scripts/train.py" "$name/logs/job.log" "$name/kineto_trace_0.json" "$name/kineto_trace_1.json" "$name/$name.yaml"; do
    grep -qxF "$want" <<<"$listing" && pass || fail "the bundle lacks $want"
done
expect_eq "run.json" "completed ingested" \
    "$(tar --zstd -xOf "$chrome" "$name/run.json" | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["state"], r["executor"])')"
"$CCL_HARNESS" metrics --json "$chrome" >"$SCRATCH/metrics.json" 2>/dev/null || fail "metrics on the ingested bundle"
expect_json "$SCRATCH/metrics.json" "sorted(r['rank'] for r in j['ranks'] if r['rank'] >= 0)" "[0, 1]" "metrics reads both ranks"
expect_status 0 "status lists the ingested run" -- "$CCL_HARNESS" status "$results"
expect_output "completed, times unknown" "$name completed  -              -"
expect_status 2 "reproduce refuses an ingested bundle" -- "$CCL_HARNESS" reproduce "$chrome" --results "$SCRATCH/reproduced"
expect_output "and says why" "nothing to re-render or compare and no pinned sources"

# 2. The tensorboard handler's names: Debian's torch writes no distributedInfo, so with two ranks
# the rank is unknown (an error naming the file); with one rank it is rank 0.
before=$(entries)
expect_status 2 "handler names without distributedInfo, 2 ranks" -- "$CCL_HARNESS" ingest "$card" "$job/out/tb" --results "$results"
expect_output "names the file" ".pt.trace.json"
expect_output "says why" "carries no rank and the trace has no distributedInfo rank"
one="$SCRATCH/tb-one"
mkdir -p "$one"
cp "$job/out/tb"/*.pt.trace.json.gz "$one/"
expect_status 0 "a handler .pt.trace.json.gz on a 1-rank card" -- "$CCL_HARNESS" ingest "$single" "$one" --results "$results"
expect_output "rank 0 as the card's one rank" "(rank 0 from single rank)"
expect_output "no scripts given: said in the bundle" "valid, unpinned, ingested"
tb=$(bundle_of)
tb_name=$(basename "$tb" .tar.zst)
tar --zstd -xOf "$tb" "$tb_name/scripts/README.txt" | grep -q "No scripts were given" && pass || fail "scripts/README.txt says none were given"

# 3. Real public Kineto traces (HTA, NCCL) under the handler's names: the rank comes from
# distributedInfo, the .json.gz kept as is, with an nsys report per rank beside them.
kineto="$SCRATCH/kineto"
mkdir -p "$kineto"
cp "$real/hta_sampled_nccl2/rank0_trace.json.gz" "$kineto/nid001_4242.1700000000000000001.pt.trace.json.gz"
cp "$real/hta_sampled_nccl2/rank1_trace.json.gz" "$kineto/nid002_4243.1700000000000000002.pt.trace.json.gz"
# No real Nsight report is in tests/: ingest copies nsys reports without reading them.
printf 'nsys stand-in\n' >"$kineto/nsys_0.nsys-rep"
printf 'nsys stand-in\n' >"$kineto/nsys_1.nsys-rep"
expect_status 0 "ingest real Kineto traces under handler names" -- "$CCL_HARNESS" ingest "$card" "$kineto" --results "$results"
expect_output "rank from distributedInfo" "kineto_trace_1.json.gz <- nid002_4243.1700000000000000002.pt.trace.json.gz (rank 1 from distributedInfo)"
expect_output "nsys reports by rank" "nsys_1.nsys-rep <- nsys_1.nsys-rep"
hta=$(bundle_of)
expect_status 0 "verify the HTA bundle" -- "$CCL_HARNESS" verify "$hta"
expect_output "unpinned, ingested" "valid, unpinned, ingested"
"$CCL_HARNESS" metrics --json "$hta" >"$SCRATCH/hta-metrics.json" 2>/dev/null || fail "metrics on the HTA bundle"
expect_json "$SCRATCH/hta-metrics.json" "sorted(r['rank'] for r in j['ranks'] if r['format'] == 'kineto')" "[0, 1]" "metrics reads the real ranks"
"$CCL_HARNESS" ingest "$card" "$kineto" --results "$results" --json >"$SCRATCH/ingest.json" 2>/dev/null || fail "ingest --json"
expect_json "$SCRATCH/ingest.json" "j['provenance'], [t['rank_from'] for t in j['traces']]" \
    "('unpinned, ingested', ['distributedInfo', 'distributedInfo', 'name', 'name'])"

# 4. Bad input: one clear error, exit 2, nothing left under results/.
before=$(entries)
badcard="$SCRATCH/bad.yaml"
sed 's/total_count: 2/total_count: two/' "$card" >"$badcard"
bad_case "a card with errors" "bad.yaml:" -- "$badcard" "$traces"
bad_case "no trace dir" "no such directory" -- "$card" "$SCRATCH/absent"
mkdir -p "$SCRATCH/empty"
bad_case "an empty trace dir" "no traces" -- "$card" "$SCRATCH/empty"
dup="$SCRATCH/dup"
mkdir -p "$dup"
cp "$job/out/chrome/rank0_trace.json" "$job/out/chrome/rank1_trace.json" "$dup/"
cp "$job/out/chrome/rank0_trace.json" "$dup/kineto_trace_0.json"
bad_case "two traces for one rank" "both claim rank 0" -- "$card" "$dup"
link="$SCRATCH/link"
mkdir -p "$link"
cp "$job/out/chrome/rank0_trace.json" "$link/"
ln -s "$job/out/chrome/rank1_trace.json" "$link/rank1_trace.json"
bad_case "a symlink" "a symbolic link cannot go into a bundle" -- "$card" "$link"
other="$SCRATCH/other"
mkdir -p "$other"
cp "$job/out/chrome/rank0_trace.json" "$job/out/chrome/rank1_trace.json" "$other/"
printf '{"not": "a trace"}\n' >"$other/summary.json"
bad_case "a file that is no trace it can place" "summary.json: not a trace name ingest can place" -- "$card" "$other"
broken="$SCRATCH/broken"
mkdir -p "$broken"
cp "$job/out/chrome/rank0_trace.json" "$broken/"
printf 'this is not JSON\n' >"$broken/rank1_trace.json"
bad_case "a trace name holding no trace" "rank1_trace.json: not a JSON trace" -- "$card" "$broken"
missing="$SCRATCH/missing"
mkdir -p "$missing"
cp "$job/out/chrome/rank1_trace.json" "$missing/"
bad_case "a rank without its trace" "no torch trace for rank 0" -- "$card" "$missing"
bad_case "a rank past total_count" "rank 1, but the card's total_count is 1" -- "$single" "$traces"
bad_case "nested --scripts" "is in a subdirectory" -- "$card" "$traces" --scripts "$job"
[ -z "$(ls -A "$TMPDIR")" ] && pass || fail "scratch left in \$TMPDIR: $(ls -A "$TMPDIR")"

finish
