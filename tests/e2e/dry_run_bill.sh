#!/bin/bash
# A Slurm dry run as a bill of materials, as a contributor with a limited allocation reads it
# before submitting: for every reference Perlmutter card, the node-hours it can charge checked
# against a hand computation, the allocation hours from the profile's charge factors, the image
# build and migrate `run` does first, the exact sbatch line and #SBATCH directives; a sweep's
# per-point bills and their total; reproduce's bill; and bad input (an unknown QOS, a bad
# charge factor) answered without a crash or a guess. Nothing is submitted, built or written.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"
export TMPDIR="$SCRATCH/tmp"
mkdir -p "$TMPDIR"
export GIT_AUTHOR_NAME=Test GIT_AUTHOR_EMAIL=test@example.invalid GIT_COMMITTER_NAME=Test \
    GIT_COMMITTER_EMAIL=test@example.invalid GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null

# run pins launch.source before it renders: a local stand-in repository keeps this suite off
# the network (the bill does not depend on the framework's source).
src="$SCRATCH/framework-src"
mkdir -p "$src"
echo stand-in >"$src/README"
git init --quiet -b main "$src"
git -C "$src" add -A
git -C "$src" commit --quiet -m stand-in
pin_for() { # pin_for CARD: the --set flags that point a card's launch.source at the stand-in
    if grep -q '^  source:' "$1"; then
        echo "--set launch.source.repo=$src --set launch.source.ref=main --git-cache $SCRATCH/git-cache"
    fi
}

# Charge factors for the test, in a user profile that shadows the shipped perlmutter one
# (docs/clusters.md): test numbers, not NERSC's; 1.5 so that a missing multiplication shows.
export XDG_CONFIG_HOME="$SCRATCH/config"
mkdir -p "$XDG_CONFIG_HOME/ccl-harness/clusters"
cat >"$XDG_CONFIG_HOME/ccl-harness/clusters/perlmutter.yaml" <<'EOF'
name: perlmutter
extends: perlmutter
slurm:
  charge_factors:
    regular: 1.5
    premium: 3
    overrun: 0
EOF

# dry_json FILE CARD ARGS...: `run CARD --dry-run --json ARGS` into FILE (stderr beside it).
dry_json() {
    local file=$1 card=$2
    shift 2
    # shellcheck disable=SC2046  # pin_for's words are meant to split
    expect_status 0 "run --dry-run --json $card $*" -- \
        sh -c '"$@" >"$0" 2>"$0.err"' "$file" "$CCL_HARNESS" run "$card" --results "$results" --dry-run --json \
        --set launch.account=m1234 $(pin_for "$card") "$@"
}

# 1. Every reference card whose target is Perlmutter, and its bill worked out by hand from the
# card (workload.hardware.xpu_spec total_count / count_per_node = nodes; launch.time_limit) and
# clusters/perlmutter.yaml (accelerator.per_node 4 GPUs, the node is charged whole):
#   card                                  nodes           time limit       node-hours   x1.5
#   deepseek-moe-16b-sglang-perlmutter    4/4 = 1         00:30:00 = 0.5 h 1 x 0.5 = 0.5  0.75
#   deepseek-v3-16b-megatron-perlmutter   16/4 = 4        00:30:00 = 0.5 h 4 x 0.5 = 2    3
#   llama-3.1-8b-torchtitan-perlmutter    16/4 = 4        00:30:00 = 0.5 h 4 x 0.5 = 2    3
#   mixtral-8x7b-vllm-serve-perlmutter    4/4 = 1         00:45:00 = 0.75h 1 x 0.75 = 0.75 1.125
#   qwen3-4b-torchtitan-perlmutter        8/4 = 2         00:30:00 = 0.5 h 2 x 0.5 = 1    1.5
#   qwen3-4b-vllm-perlmutter              4/4 = 1         00:30:00 = 0.5 h 1 x 0.5 = 0.5  0.75
bills=(
    "deepseek-moe-16b-sglang-perlmutter 1 0.5 0.5 0.75"
    "deepseek-v3-16b-megatron-perlmutter 4 0.5 2.0 3.0"
    "llama-3.1-8b-torchtitan-perlmutter 4 0.5 2.0 3.0"
    "mixtral-8x7b-vllm-serve-perlmutter 1 0.75 0.75 1.125"
    "qwen3-4b-torchtitan-perlmutter 2 0.5 1.0 1.5"
    "qwen3-4b-vllm-perlmutter 1 0.5 0.5 0.75"
)
# A new Perlmutter card must join the table above: the set is checked, not assumed.
listed=$(for bill in "${bills[@]}"; do echo "${bill%% *}"; done | sort)
found=$(grep -l '^  cluster: perlmutter' workloads/*/*.yaml | xargs -n1 basename | sed 's/\.yaml$//' | sort)
expect_eq "the Perlmutter reference cards are the ones billed here" "$listed" "$found"

for bill in "${bills[@]}"; do
    read -r name nodes hours node_hours allocation <<<"$bill"
    card="workloads/$name/$name.yaml"
    f="$SCRATCH/$name.json"
    dry_json "$f" "$card"
    expect_json "$f" 'j["preview"]["bill"]["nodes"]' "$nodes" "$name: nodes"
    expect_json "$f" 'j["preview"]["bill"]["gpus"]' "$((nodes * 4))" "$name: GPUs"
    expect_json "$f" 'round(float(j["preview"]["bill"]["time_limit_hours"]), 4)' "$hours" "$name: time limit in hours"
    expect_json "$f" 'round(float(j["preview"]["bill"]["node_hours"]), 4)' "$node_hours" "$name: node-hours"
    expect_json "$f" 'j["preview"]["bill"]["charge_factor"]' "1.5" "$name: regular's charge factor"
    expect_json "$f" 'round(float(j["preview"]["bill"]["allocation_hours"]), 4)' "$allocation" "$name: allocation hours"
    expect_json "$f" '(j["preview"]["bill"]["account"], j["preview"]["bill"]["qos"], j["preview"]["bill"]["constraint"])' \
        "('m1234', 'regular', 'gpu')" "$name: account, QOS, constraint"
    expect_json "$f" '"perlmutter.yaml:" in j["preview"]["bill"]["charge_factor_source"]' "True" "$name: the factor's source"
    # The directives are the rendered script's own, the sbatch line the executor's.
    expect_json "$f" '[d for d in j["preview"]["sbatch"]["directives"] if d.split("=")[0] in ("--account", "--qos", "--nodes", "--time")]' \
        "['--account=m1234', '--qos=regular', '--time=$(sed -n 's/^  time_limit: "\(.*\)"/\1/p' "$card")', '--nodes=$nodes']" \
        "$name: #SBATCH directives"
    expect_json "$f" 'j["preview"]["sbatch"]["command"]' "sbatch --parsable --no-requeue launch.sbatch" "$name: the sbatch line"
    # The image: podman-hpc builds it from the rendered Containerfile, then migrates it.
    expect_json "$f" '(j["preview"]["image"]["runtime"], j["preview"]["image"]["migrate"])' "('podman-hpc', True)" "$name: image runtime"
    expect_json "$f" 'any(c.startswith("podman-hpc build --tag " + j["preview"]["image"]["tag"] + " --file ") for c in j["preview"]["image"]["commands"])' \
        "True" "$name: the podman-hpc build"
    expect_json "$f" '"podman-hpc migrate " + j["preview"]["image"]["tag"] in j["preview"]["image"]["commands"]' "True" "$name: the migrate"
    expect_json "$f" '"/" in j["preview"]["image"]["base"] and not j["preview"]["image"]["problem"]' \
        "True" "$name: the base image the build starts FROM"
done
[ ! -e "$results" ] && pass || fail "a dry run wrote $results"

# The text a contributor reads, in the same order as the JSON.
card=workloads/llama-3.1-8b-torchtitan-perlmutter/llama-3.1-8b-torchtitan-perlmutter.yaml
# shellcheck disable=SC2046
expect_status 0 "run --dry-run (text)" -- "$CCL_HARNESS" run "$card" --results "$results" --dry-run \
    --set launch.account=m1234 $(pin_for "$card")
expect_output "what is billed" "bill: account m1234, QOS regular, constraint gpu, 4 node(s) x 4 GPU(s) = 16 GPU(s), time limit 00:30:00 (0.5 h)"
expect_output "node-hours" "bill: can charge at most 2 node-hour(s) (4 node(s) x 0.5 h, if the job runs to its time limit)"
expect_output "allocation hours" "bill: at most 3 allocation hour(s) (2 node-hour(s) x charge factor 1.5 of QOS regular"
expect_output "the image work" "image: podman-hpc builds localhost/"
expect_output "and its migrate" "and migrates it for the compute nodes, before it submits"
expect_output "the sbatch line" "sbatch: sbatch --parsable --no-requeue launch.sbatch (in $results/<run-id>/rendered), with the rendered script's #SBATCH directives:"
expect_output "what run submits" "would submit: sbatch --parsable --no-requeue launch.sbatch (in $results/<run-id>/rendered)"
expect_output "the directives" "  #SBATCH --account=m1234"

# 2. Variations: another QOS, another time limit, run --requeue.
f="$SCRATCH/premium.json"
dry_json "$f" "$card" --set launch.qos=premium --set launch.time_limit=02:00:00
# 4 nodes x 2 h = 8 node-hours; x 3 (premium, the test profile) = 24.
expect_json "$f" 'round(float(j["preview"]["bill"]["node_hours"]), 4)' "8.0" "premium, 2 h: node-hours"
expect_json "$f" 'round(float(j["preview"]["bill"]["allocation_hours"]), 4)' "24.0" "premium, 2 h: allocation hours"
expect_json "$f" '"--time=02:00:00" in j["preview"]["sbatch"]["directives"]' "True" "the new time limit reaches #SBATCH"
f="$SCRATCH/overrun.json"
dry_json "$f" "$card" --set launch.qos=overrun
expect_json "$f" '(float(j["preview"]["bill"]["charge_factor"]), float(j["preview"]["bill"]["allocation_hours"]))' "(0.0, 0.0)" \
    "a free QOS charges 0, which is known, not unknown"
f="$SCRATCH/requeue.json"
# shellcheck disable=SC2046
expect_status 0 "run --dry-run --requeue" -- sh -c '"$@" >"$0" 2>/dev/null' "$f" "$CCL_HARNESS" run "$card" \
    --results "$results" --dry-run --json --requeue --set launch.account=m1234 $(pin_for "$card")
expect_json "$f" 'j["preview"]["sbatch"]["command"]' "sbatch --parsable --requeue launch.sbatch" "run --requeue's sbatch line"

# 3. Bad input: a QOS the profile has no factor for says so; it is not guessed, nor a crash.
f="$SCRATCH/unknown-qos.json"
dry_json "$f" "$card" --set launch.qos=nosuchqos
expect_json "$f" '(j["preview"]["bill"]["charge_factor"], j["preview"]["bill"]["allocation_hours"])' "(None, None)" "unknown QOS: no factor"
expect_json "$f" 'round(float(j["preview"]["bill"]["node_hours"]), 4)' "2.0" "unknown QOS: node-hours still known"
expect_json "$f" '"unknown" in j["preview"]["bill"]["charge_factor_source"] and "nosuchqos" in j["preview"]["bill"]["charge_factor_source"]' \
    "True" "unknown QOS: says which"
# shellcheck disable=SC2046
expect_status 0 "unknown QOS (text)" -- "$CCL_HARNESS" run "$card" --results "$results" --dry-run \
    --set launch.account=m1234 --set launch.qos=nosuchqos $(pin_for "$card")
expect_output "unknown QOS (text)" 'bill: allocation hours unknown: charge factor unknown: profile perlmutter.yaml has no charge factor for QOS "nosuchqos"'
# The shipped profile lists no factor (none could be read from NERSC's page): unknown, said so.
f="$SCRATCH/shipped.json"
# shellcheck disable=SC2046
expect_status 0 "the shipped profile" -- env XDG_CONFIG_HOME="$SCRATCH/no-config" sh -c '"$@" >"$0" 2>/dev/null' "$f" \
    "$CCL_HARNESS" run "$card" --results "$results" --dry-run --json --set launch.account=m1234 $(pin_for "$card")
expect_json "$f" '(j["preview"]["bill"]["allocation_hours"], "lists no charge factors" in j["preview"]["bill"]["charge_factor_source"])' \
    "(None, True)" "shipped profile: allocation hours unknown"
# A charge factor that is not a number >= 0 is refused where it is written.
for bad in "-1" "lots"; do
    cat >"$XDG_CONFIG_HOME/ccl-harness/clusters/perlmutter.yaml" <<EOF
name: perlmutter
extends: perlmutter
slurm:
  charge_factors:
    regular: $bad
EOF
    # shellcheck disable=SC2046
    expect_status 2 "charge factor $bad" -- "$CCL_HARNESS" run "$card" --results "$results" --dry-run \
        --set launch.account=m1234 $(pin_for "$card")
    expect_output "charge factor $bad: where" "perlmutter.yaml:5:"
    expect_output "charge factor $bad: what" "slurm.charge_factors.regular: expected a number >= 0"
done
cat >"$XDG_CONFIG_HOME/ccl-harness/clusters/perlmutter.yaml" <<'EOF'
name: perlmutter
extends: perlmutter
slurm:
  charge_factors:
    regular: 1.5
EOF

# 4. Whether the image is built already is asked of podman-hpc; nothing is built or migrated:
# a stand-in answers `image exists` and refuses (and logs) anything else.
bin="$SCRATCH/bin"
mkdir -p "$bin"
cat >"$bin/podman-hpc" <<'EOF'
#!/bin/bash
echo "$*" >>"$PODMAN_HPC_LOG"
[ "$1 $2" = "image exists" ] && exit "${PODMAN_HPC_EXISTS:-1}"
exit 99
EOF
chmod +x "$bin/podman-hpc"
export PODMAN_HPC_LOG="$SCRATCH/podman-hpc.log"
plain_path=$PATH
for exists in 0 1; do
    : >"$PODMAN_HPC_LOG"
    f="$SCRATCH/image-$exists.json"
    export PATH="$bin:$plain_path" PODMAN_HPC_EXISTS=$exists
    dry_json "$f" "$card"
    export PATH="$plain_path"
    want=$([ "$exists" = 0 ] && echo yes || echo no)
    expect_json "$f" 'j["preview"]["image"]["present"]' "$want" "podman-hpc image exists -> $exists"
    expect_json "$f" 'any(" build " in " " + c + " " for c in j["preview"]["image"]["commands"])' \
        "$([ "$exists" = 0 ] && echo False || echo True)" "built already: no build; not built: the build"
    # (`run --rm ... ccl_preflight.py` is the job's preflight, run in an image that is there.)
    expect_eq "the dry run built, migrated or pulled nothing" "" "$(grep -Ev '^(image exists |run --rm )' "$PODMAN_HPC_LOG" || true)"
done
# Without podman-hpc (this machine), it cannot tell, says so and lists the build.
expect_json "$SCRATCH/premium.json" '(j["preview"]["image"]["present"], "cannot say" in j["preview"]["image"]["present_note"])' \
    "('unknown', True)" "no podman-hpc: present unknown"

# 5. A sweep's bill: per point, and the total is their sum.
card=workloads/qwen3-4b-torchtitan-perlmutter/qwen3-4b-torchtitan-perlmutter.yaml
f="$SCRATCH/sweep.json"
expect_status 0 "sweep --dry-run --json" -- sh -c '"$@" >"$0" 2>/dev/null' "$f" "$CCL_HARNESS" sweep "$card" \
    --vary launch.time_limit=00:30:00,01:00:00 --results "$results" --dry-run --json
# 2 nodes x 0.5 h = 1 and 2 nodes x 1 h = 2: 3 node-hours in all, x 1.5 = 4.5 allocation hours.
expect_json "$f" '[round(float(p["bill"]["node_hours"]), 4) for p in j["points"]]' "[1.0, 2.0]" "sweep: each point's node-hours"
expect_json "$f" 'round(float(j["bill_total"]["node_hours"]), 4)' "3.0" "sweep: the total"
expect_json "$f" 'round(float(j["bill_total"]["allocation_hours"]), 4)' "4.5" "sweep: the allocation total"
expect_json "$f" 'abs(j["bill_total"]["node_hours"] - sum(p["bill"]["node_hours"] for p in j["points"])) < 1e-9' "True" \
    "sweep: total = sum of the points"
expect_status 0 "sweep --dry-run (text)" -- "$CCL_HARNESS" sweep "$card" --vary launch.time_limit=00:30:00,01:00:00 \
    --results "$results" --dry-run
expect_output "sweep: a point's line" "  bill: launch.time_limit=01:00:00: at most 2 node-hour(s) (2 node(s) x 1 h), 3 allocation hour(s) in QOS regular"
expect_output "sweep: the total line" "bill: the 2 point(s) can charge at most 3 node-hour(s) in all, 4.5 allocation hour(s)"
[ ! -e "$results" ] && pass || fail "a dry run sweep wrote $results"

# 6. reproduce --dry-run shows the same bill: a local tiny-ddp bundle reproduced on slurm-local
# (1 node x 00:10:00 = 1/6 node-hour; slurm-local charges nothing and names no QOS: unknown).
bundles="$SCRATCH/bundles"
expect_status 0 "tiny-ddp runs and packs" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$bundles"
bundle=$(sed -n 's/^  bundle: \(.*\.tar\.zst\).*/\1/p' <<<"$OUT" | tail -n 1)
f="$SCRATCH/reproduce.json"
expect_status 0 "reproduce --dry-run --json on slurm-local" -- sh -c '"$@" >"$0" 2>/dev/null' "$f" "$CCL_HARNESS" reproduce \
    "$bundle" --cluster slurm-local --results "$results" --dry-run --json
expect_json "$f" 'round(float(j["preview_slurm"]["bill"]["node_hours"]), 4)' "0.1667" "reproduce: node-hours"
expect_json "$f" '(j["preview_slurm"]["bill"]["allocation_hours"], j["preview_slurm"]["bill"]["gpus"], j["preview_slurm"]["image"])' \
    "(None, 0, None)" "reproduce: no charge factor, no GPUs, no image on slurm-local"
expect_json "$f" 'j["preview_slurm"]["sbatch"]["command"].startswith("sbatch --parsable --no-requeue ")' "True" "reproduce: the sbatch line"
expect_status 0 "reproduce --dry-run (text)" -- "$CCL_HARNESS" reproduce "$bundle" --cluster slurm-local --results "$results" --dry-run
expect_output "reproduce: the bill" "bill: can charge at most 0.17 node-hour(s) (1 node(s) x 0.17 h, if the job runs to its time limit)"
expect_output "reproduce: no QOS" "bill: allocation hours unknown: charge factor no QOS asked for"
[ ! -e "$results" ] && pass || fail "a dry run reproduce wrote $results"

finish
