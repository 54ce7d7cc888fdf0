#!/usr/bin/env bash
# Finding things: cluster profiles by name (the user's before the shipped ones) or by path,
# `list`, and `explain` (the resolved plan with every value's origin).
source "$(dirname "$0")/lib.sh"

tiny="$CCL_SOURCE_DIR/workloads/tiny-ddp/tiny-ddp.yaml"
titan="$CCL_SOURCE_DIR/workloads/llama-3.1-8b-torchtitan-perlmutter/llama-3.1-8b-torchtitan-perlmutter.yaml"
json() { # json EXPR: evaluates a Python expression over $OUT parsed as JSON (as j)
    /usr/bin/python3 -c 'import json,sys; j=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$1" <<<"$OUT"
}
expect_stdout() { # expect_stdout CODE DESCRIPTION -- COMMAND...: like expect_status, $OUT is stdout only
    local want=$1 what=$2
    shift 3
    local got=0
    OUT=$("$@" 2>"$SCRATCH/stderr") || got=$?
    if [ "$got" -eq "$want" ]; then pass; else fail "$what: exit $got, wanted $want; output:"$'\n'"$OUT$(cat "$SCRATCH/stderr")"; fi
}
expect_line() { # expect_line DESCRIPTION REGEX: some line of $OUT matches the extended regex
    if grep -qE -- "$2" <<<"$OUT"; then pass; else fail "$1: no line matches [$2]; output:"$'\n'"$OUT"; fi
}
expect_eq() { # expect_eq DESCRIPTION GOT WANT
    if [ "$2" = "$3" ]; then pass; else fail "$1: got [$2], wanted [$3]"; fi
}

# A user configuration of our own: the real ~/.config must not leak in, nor be written.
export XDG_CONFIG_HOME="$SCRATCH/config"
user_dir="$XDG_CONFIG_HOME/ccl-harness/clusters"
mkdir -p "$user_dir"
local_profile() { sed "s/^name: local\$/name: $1/" "$CCL_SOURCE_DIR/clusters/local.yaml"; }

# --- list ------------------------------------------------------------------------------------
expect_status 0 "list" -- "$CCL_HARNESS" list
expect_line "a cluster row" "^  perlmutter +slurm +GPU nvidia_a100,.* x4 +shipped $CCL_SOURCE_DIR/clusters/perlmutter.yaml\$"
for needle in "clusters (--cluster NAME; first found wins: $user_dir, " \
    "frameworks (" "torch-ddp    local, perlmutter, slurm-local" "templates (" "maxtext/tpu-v6e" \
    "metrics (" "avg_step_time" "mfu"; do
    expect_output "list shows [$needle]" "$needle"
done
expect_status 0 "list clusters --names" -- "$CCL_HARNESS" list clusters --names
expect_eq "cluster names" "$OUT" $'local\nperlmutter\nslurm-local\nslurm-multi\ntpu-v6e'
expect_status 0 "list metrics --names" -- "$CCL_HARNESS" list metrics --names
expect_eq "metric names" "$(tr '\n' ' ' <<<"$OUT")" \
    "avg_step_time compute_comm_overlap communication_fraction total_communication_time collective_volume straggler mfu ttft tpot total_kernel_time total_trace_time coll_call_num "
expect_stdout 0 "list frameworks --json" -- "$CCL_HARNESS" list frameworks --json
expect_eq "torch-ddp targets" "$(json '[f["targets"] for f in j["frameworks"] if f["name"] == "torch-ddp"][0]')" \
    "['local', 'perlmutter', 'slurm-local']"
expect_eq "only the section asked for" "$(json 'sorted(j)')" "['frameworks']"
expect_stdout 0 "list templates --json" -- "$CCL_HARNESS" list templates --json
expect_eq "template files" "$(json '[t["files"] for t in j["templates"] if t["framework"] == "maxtext"][0]')" \
    "['jobset.yaml.mustache', 'launch.sh.mustache', 'remote.sh.mustache']"
expect_status 2 "unknown section" -- "$CCL_HARNESS" list clusterz
expect_output "section suggestion" "unknown list section \"clusterz\" (did you mean \"clusters\"?)"

# --- user profiles ---------------------------------------------------------------------------
local_profile mybox >"$user_dir/mybox.yaml"
echo "templates: local" >>"$user_dir/mybox.yaml"
local_profile local | sed 's/OMP_NUM_THREADS: "1"/OMP_NUM_THREADS: "3"/' >"$user_dir/local.yaml"
expect_stdout 0 "list sees user profiles" -- "$CCL_HARNESS" list clusters --json
expect_eq "user profile" "$(json '[(c["found"], c["file"]) for c in j["clusters"] if c["name"] == "mybox"]')" \
    "[('user', '$user_dir/mybox.yaml')]"
expect_eq "user profile hides the shipped one" "$(json '[(c["found"], c["shadows"]) for c in j["clusters"] if c["name"] == "local"]')" \
    "[('user', '$CCL_SOURCE_DIR/clusters/local.yaml')]"
expect_status 0 "list clusters shows where" -- "$CCL_HARNESS" list clusters
expect_output "hidden shipped profile" "user $user_dir/local.yaml (hides the shipped one)"

expect_status 0 "render with a user profile" -- "$CCL_HARNESS" render "$tiny" --cluster mybox --out "$SCRATCH/mybox"
expect_output "render names the cluster" "rendered tiny-ddp for mybox"
[ -f "$SCRATCH/mybox/launch.sh" ] && pass || fail "render with a user profile wrote no launch.sh"
expect_status 0 "the card's launch.cluster finds the user's local" -- "$CCL_HARNESS" render "$tiny" --out "$SCRATCH/userlocal"
grep -qx "export OMP_NUM_THREADS=3" "$SCRATCH/userlocal/env.sh" && pass || fail "the user's local profile (OMP_NUM_THREADS 3) was not used"

local_profile notemplates >"$user_dir/notemplates.yaml"
expect_status 2 "a user profile without templates:" -- "$CCL_HARNESS" render "$tiny" --cluster notemplates --out "$SCRATCH/notemplates"
expect_output "the hint names the key" "$user_dir/notemplates.yaml: add \`templates: TARGET\`"
rm "$user_dir/notemplates.yaml"

printf 'name: broken\nscheduler: pbs\n' >"$user_dir/broken.yaml"
expect_status 2 "broken user profile" -- "$CCL_HARNESS" render "$tiny" --cluster broken --out "$SCRATCH/broken"
expect_output "broken profile position" "$user_dir/broken.yaml:2:12: scheduler: expected one of slurm, tpu-vm, gke, local"
[ ! -e "$SCRATCH/broken" ] && pass || fail "a broken profile left an output directory"
rm "$user_dir/broken.yaml"

expect_status 2 "unknown cluster" -- "$CCL_HARNESS" render "$tiny" --cluster mybx --out "$SCRATCH/unknown"
expect_output "suggestion" "unknown cluster \"mybx\" (did you mean \"mybox\"?)"
expect_output "names from both places" "known clusters: local, mybox, perlmutter, slurm-local, slurm-multi, tpu-v6e"
expect_output "directories searched" "searched $user_dir, $CCL_SOURCE_DIR/clusters"

# --- profiles by path ------------------------------------------------------------------------
mkdir -p "$SCRATCH/work"
{ local_profile mine; echo "templates: local"; } >"$SCRATCH/work/mine.yaml"
expect_status 0 "render --cluster ./mine.yaml" -- bash -c "cd '$SCRATCH/work' && '$CCL_HARNESS' render '$tiny' --cluster ./mine.yaml --out out"
expect_output "path profile" "rendered tiny-ddp for mine"
expect_status 2 "missing path" -- "$CCL_HARNESS" render "$tiny" --cluster "$SCRATCH/work/nope.yaml" --out "$SCRATCH/nope"
expect_output "missing path message" "cluster profile \"$SCRATCH/work/nope.yaml\": no such file"
expect_status 2 "a directory as profile" -- "$CCL_HARNESS" render "$tiny" --cluster "$SCRATCH/work/" --out "$SCRATCH/nope"
expect_output "a directory is named as such" "cluster profile \"$SCRATCH/work/\": not a regular file"
# A file that is one long line (/etc/passwd, a binary) is one scalar: the error shows its start only.
head -c 5000 /dev/zero | tr '\0' 'x' >"$SCRATCH/work/long.yaml"
expect_status 2 "a profile that is one long scalar" -- "$CCL_HARNESS" render "$tiny" --cluster "$SCRATCH/work/long.yaml" --out "$SCRATCH/nope"
expect_output "its start, and its length" "expected a mapping at the top level, got \"$(printf 'x%.0s' $(seq 60))\"... (5000 characters)"
[ "$(grep -c "ccl-harness: error:" <<<"$OUT")" -eq 1 ] && pass || fail "one error, one prefix:"$'\n'"$OUT"
[ "${#OUT}" -lt 600 ] && pass || fail "the message quotes the whole file (${#OUT} characters)"
[ ! -e "$SCRATCH/nope" ] && pass || fail "a refused profile left an output directory"
local_profile somebody >"$SCRATCH/work/other.yml"
expect_status 2 "a path profile is checked" -- "$CCL_HARNESS" render "$tiny" --cluster "$SCRATCH/work/other.yml" --out "$SCRATCH/other"
expect_output "path profile position" "$SCRATCH/work/other.yml:2:7: name: must match the file name \"other\""
# launch.cluster as a path is relative to the card, wherever the command runs.
cp "$tiny" "$CCL_SOURCE_DIR/workloads/tiny-ddp/train.py" "$SCRATCH/work/"
expect_status 0 "launch.cluster path, relative to the card" -- bash -c \
    "cd / && '$CCL_HARNESS' render '$SCRATCH/work/tiny-ddp.yaml' --set launch.cluster=mine.yaml --out '$SCRATCH/cardpath'"
expect_output "card path profile" "rendered tiny-ddp for mine"

# --- explain ---------------------------------------------------------------------------------
expect_status 0 "explain with a user profile hiding a shipped one" -- "$CCL_HARNESS" explain "$tiny"
expect_output "the shadowing note" "cluster: local (user profile $user_dir/local.yaml)"
expect_output "what it hides" "this user profile hides the shipped one at $CCL_SOURCE_DIR/clusters/local.yaml"
rm "$user_dir/local.yaml"
expect_status 0 "explain tiny-ddp" -- "$CCL_HARNESS" explain "$tiny"
expect_output "header" "cluster: local (shipped profile $CCL_SOURCE_DIR/clusters/local.yaml), chosen by launch.cluster at $tiny:"
line_of() { grep -n -- "$2" "$1" | head -n 1 | cut -d: -f1; }
expect_line "a card value" "^steps +12 +card $tiny:$(line_of "$tiny" "  steps: 12"):10 \\(launch.steps\\)\$"
expect_line "a profile value" "^env.OMP_NUM_THREADS +1 +profile $CCL_SOURCE_DIR/clusters/local.yaml:$(line_of "$CCL_SOURCE_DIR/clusters/local.yaml" OMP_NUM_THREADS):20 \\(env.OMP_NUM_THREADS\\)\$"
expect_line "a derived value" "^geometry.world_size +2 +derived: workload.hardware.xpu_spec.total_count 2 \\(nodes 1 x ranks_per_node 2\\)\$"
expect_line "a default" "^parallelism.pp_mb +1 +default: 1 when the card does not give this degree\$"
expect_stdout 0 "explain --set --json" -- "$CCL_HARNESS" explain "$tiny" --set launch.steps=3 --json
expect_eq "set origin" "$(json '[(v["value"], v["origin"]) for v in j["values"] if v["field"] == "steps"]')" \
    "[(3, {'detail': 'launch.steps', 'kind': 'set', 'where': '--set launch.steps=3'})]"
expect_eq "cluster" "$(json '(j["target"], j["cluster"]["name"], j["cluster"]["file"], j["cluster"]["found"])')" \
    "('local', 'local', '$CCL_SOURCE_DIR/clusters/local.yaml', 'shipped')"
expect_eq "default origin" "$(json '[v["origin"]["kind"] for v in j["values"] if v["field"] == "parallelism.pp_mb"]')" "['default']"
expect_eq "every value has an origin" "$(json 'all(v["origin"]["kind"] in ("card","set","profile","default","derived") for v in j["values"])')" "True"
# The values are plan.json's.
"$CCL_HARNESS" render "$tiny" --set launch.steps=3 --out "$SCRATCH/plan" >/dev/null
expect_eq "explain shows plan.json's values" "$(/usr/bin/python3 -c '
import json, sys
def flat(value, path=""):
    if isinstance(value, dict):
        out = {}
        for key, child in value.items():
            out.update(flat(child, path + "." + key if path else key))
        return out
    return {path: value}
explained = {v["field"]: v["value"] for v in json.loads(sys.stdin.read())["values"]}
print(explained == flat(json.load(open(sys.argv[1]))))' "$SCRATCH/plan/plan.json" <<<"$OUT")" "True"

expect_stdout 0 "explain a Perlmutter reference card" -- "$CCL_HARNESS" explain "$titan" --json
expect_eq "perlmutter from launch.cluster" "$(json '(j["cluster"]["name"], j["cluster"]["chosen_by"].startswith("launch.cluster at "))')" "('perlmutter', True)"
expect_eq "constraint from the profile" "$(json '[(v["value"], v["origin"]["kind"], v["origin"]["detail"]) for v in j["values"] if v["field"] == "scheduler_options.constraint"]')" \
    "[('gpu', 'profile', 'slurm.constraint')]"
expect_eq "qos from the card" "$(json '[(v["value"], v["origin"]["kind"], v["origin"]["detail"]) for v in j["values"] if v["field"] == "scheduler_options.qos"]')" \
    "[('regular', 'card', 'launch.qos')]"
expect_stdout 0 "explain with the cluster from the accelerator" -- "$CCL_HARNESS" explain "$titan" --set launch.cluster= --json
expect_eq "perlmutter by the accelerator" "$(json 'j["cluster"]["chosen_by"]')" "the accelerator: workload.hardware.xpu_spec.model \"nvidia_a100\""
expect_eq "nodes derived" "$(json '[v["origin"]["kind"] for v in j["values"] if v["field"] == "geometry.nodes"]')" "['derived']"
expect_status 0 "explain with a user profile" -- "$CCL_HARNESS" explain "$tiny" --cluster mybox
expect_output "user profile" "cluster: mybox (user profile $user_dir/mybox.yaml), chosen by --cluster mybox"
expect_output "its templates" "target:  local (the templates this profile renders with)"

expect_status 2 "explain a missing card" -- "$CCL_HARNESS" explain "$SCRATCH/none.yaml"
expect_status 2 "explain an invalid card" -- "$CCL_HARNESS" explain "$tiny" --set Model-executor.model_plan_parallelization.tp=four
expect_output "the validate error" "--set Model-executor.model_plan_parallelization.tp=four: Model-executor.model_plan_parallelization.tp: expected a positive integer"
expect_status 2 "explain an unknown cluster" -- "$CCL_HARNESS" explain "$tiny" --cluster nowhere
expect_output "unknown cluster" "unknown cluster \"nowhere\""
expect_status 2 "explain an unknown --set path" -- "$CCL_HARNESS" explain "$tiny" --set launch.stepz=3
expect_output "unknown path" "--set launch.stepz=3: unknown field \"launch.stepz\"; did you mean \"launch.steps\"?"
expect_status 0 "explain a new field with --allow-new" -- "$CCL_HARNESS" explain "$tiny" --set launch.stepz=3 --allow-new

finish
