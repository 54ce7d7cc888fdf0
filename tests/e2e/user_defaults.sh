#!/bin/bash
# A user's defaults.yaml ($XDG_CONFIG_HOME/ccl-harness/defaults.yaml) and sbatch's input
# environment ($SBATCH_ACCOUNT...) supply the site facts a card leaves unset, below the card and
# --set; explain says which gave each value; results: moves the default results directory; runs
# are named by --name, or a card.yaml by its directory. Commands as a user types them, from the
# checkout root and from another directory.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
export XDG_CONFIG_HOME="$SCRATCH/config"
unset CCL_HARNESS_DEFAULTS SBATCH_ACCOUNT SBATCH_QOS SBATCH_PARTITION SBATCH_CONSTRAINT SBATCH_TIMELIMIT
defaults="$XDG_CONFIG_HOME/ccl-harness/defaults.yaml"
mkdir -p "$(dirname "$defaults")"
digest=$(printf '0%.0s' {1..64})
corpus_card=$(find "$CORPUS/trace_collection" -name 'qwen3-4b-vllm-tp4-perlmutter\[nccl\].yaml' | head -n 1)

# 1. Without defaults an archived card lacks the site facts; with them it passes --strict as it is.
expect_status 2 "a corpus card without site facts fails --strict" -- "$CCL_HARNESS" validate --strict "$corpus_card"
expect_output "naming the account" "launch.account"
cat >"$defaults" <<YAML
# site facts, once for every card
launch:
  account: m1234
  container:
    image: docker.io/library/x@sha256:$digest
  tpu:
    project: my-project
  env:
    HF_HOME: /pscratch/sd/e/elvis/hf
results: ../ccl-results
YAML
expect_status 0 "the same card passes --strict with site facts from defaults.yaml" -- \
    "$CCL_HARNESS" validate --strict "$corpus_card"
expect_status 0 "explain" -- "$CCL_HARNESS" explain "$corpus_card"
expect_output "the account is the user's default, at its line" "user default $defaults:3:12 (launch.account)"
expect_output "HF_HOME from defaults is the cache the job uses" "user default $defaults:9:14 (launch.env.HF_HOME)"
rendered="$SCRATCH/rendered"
expect_status 0 "render" -- "$CCL_HARNESS" render "$corpus_card" --out "$rendered"
grep -qx 'export HF_HOME=/pscratch/sd/e/elvis/hf' "$rendered/launch.sbatch" && pass ||
    fail "the rendered job exports the user's HF_HOME: $(grep -n HF_HOME "$rendered/launch.sbatch")"

# explain --fix: what the card lacks, as YAML to paste; pasted (placeholders replaced), it passes.
rm "$defaults"
expect_status 0 "explain --fix on an archived card" -- "$CCL_HARNESS" explain --fix "$corpus_card"
fix_out=$OUT
expect_output "the account, a site fact for defaults.yaml" "once in $defaults"
expect_output "the image, for the card" "image: <registry/repository>@sha256:<64 hex digits>"
awk -v RS= 'NR == 1' <<<"$fix_out" | sed 's/account: .*/account: m1234/' >"$defaults"
fixed_card="$SCRATCH/fixed.yaml"
{ cat "$corpus_card"; awk -v RS= 'NR == 2' <<<"$fix_out" | sed "s/image: .*/image: docker.io\/vllm\/vllm-openai@sha256:$digest/"; } >"$fixed_card"
expect_status 0 "the pasted block makes the card pass --strict" -- "$CCL_HARNESS" validate --strict "$fixed_card"
expect_status 0 "and --fix then has nothing to add" -- "$CCL_HARNESS" explain --fix "$fixed_card"
expect_output "saying so" "runs as it is on perlmutter: nothing to add"
# tp 4 on a total_count of 2: more ranks than GPUs, which no launch: block mends.
bad_card=$(find "$CORPUS/trace_collection_bad" -name 'llama-3.1-8b-vllm-tp_4-perlmutter_group_5.yaml' | head -n 1)
expect_status 1 "a card that contradicts itself: --fix exits 1" -- "$CCL_HARNESS" explain --fix "$bad_card"
expect_output "listing its own problem at its line" "= 4, but total_count is 2"
cat >"$defaults" <<YAML
# site facts, once for every card
launch:
  account: m1234
  container:
    image: docker.io/library/x@sha256:$digest
  tpu:
    project: my-project
  env:
    HF_HOME: /pscratch/sd/e/elvis/hf
results: ../ccl-results
YAML

# 2. Precedence: --set over the card over $SBATCH_* over defaults.yaml over the profile.
SBATCH_ACCOUNT=m9999 expect_status 0 "explain with \$SBATCH_ACCOUNT" -- "$CCL_HARNESS" explain "$corpus_card"
expect_output "\$SBATCH_ACCOUNT beats defaults.yaml" "user default \$SBATCH_ACCOUNT (launch.account)"
SBATCH_ACCOUNT=m9999 expect_status 0 "explain with --set" -- "$CCL_HARNESS" explain "$corpus_card" --set launch.account=m42
expect_output "--set beats both" "--set launch.account=m42"
expect_status 0 "explain without HF_HOME" -- "$CCL_HARNESS" explain workloads/qwen3-4b-vllm-perlmutter/qwen3-4b-vllm-perlmutter.yaml \
    --set launch.env.HF_HOME=/global/cfs/hf
expect_output "a card's HF_HOME is the job's cache" "--set launch.env.HF_HOME=/global/cfs/hf"

# 3. Bad defaults: one error at the file's line, exit 2, nothing run or written.
printf 'launch:\n  account: m1\nresult: /x\n' >"$defaults"
expect_status 2 "a misspelt top-level key" -- "$CCL_HARNESS" validate --strict "$corpus_card"
expect_output "at its line, with a suggestion" "$defaults:3:1: result: unknown key in a defaults file; did you mean \"results\"?"
printf 'launch:\n  acount: m1\n' >"$defaults"
expect_status 2 "a misspelt launch key" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$SCRATCH/never"
expect_output "at the defaults file's line" "$defaults:2:11: launch.acount: unknown key"
[ ! -e "$SCRATCH/never" ] && pass || fail "a refused run wrote $SCRATCH/never"
printf 'launch: {account: [\n' >"$defaults"
expect_status 2 "defaults that are not YAML" -- "$CCL_HARNESS" explain "$corpus_card"
expect_output "with file and line" "$defaults:2:"

# 4. results: and --name, from the checkout root and from elsewhere.
printf 'results: ../ccl-results\n' >"$defaults"
expect_status 0 "run with results: from defaults.yaml and --name" -- \
    "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --name my-try --no-pack --set launch.steps=9
runs=("$XDG_CONFIG_HOME"/ccl-results/my-try-*/)
[ -f "${runs[0]}run.json" ] && pass || fail "no run my-try-* under the defaults' results: $OUT"
expect_status 0 "status reads the same directory" -- "$CCL_HARNESS" status
expect_output "listing the run" "my-try-"
expect_output "with the overrides it was made with" "  set: launch.steps=9"
(cd "$SCRATCH" && CCL_HARNESS_DEFAULTS=none expect_status 2 "status where there is no ./results" -- "$CCL_HARNESS" status && echo "$OUT") >"$SCRATCH/status.log" || true
grep -qF "results: no such directory; runs go to ./results unless" "$SCRATCH/status.log" && pass ||
    fail "status without results says where it looked and how to point it: $(cat "$SCRATCH/status.log")"
expect_status 0 "list workloads: the reference cards" -- "$CCL_HARNESS" list workloads
expect_output "with framework and target" "workloads/tiny-ddp/tiny-ddp.yaml"
expect_output "a serving card among them" "mixtral-8x7b-vllm-serve-perlmutter.yaml"
expect_status 2 "an unusable --name" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --name a/b --dry-run
expect_output "says why" "--name \"a/b\": a name has letters, digits, '.', '_' and '-' only"
row="$SCRATCH/llama-row-42"
cp -r workloads/tiny-ddp "$row"
mv "$row/tiny-ddp.yaml" "$row/card.yaml"
(cd /tmp && expect_status 0 "a card.yaml run from another directory" -- \
    "$CCL_HARNESS" run "$row/card.yaml" --results "$SCRATCH/elsewhere" --no-pack && echo "$OUT") >"$SCRATCH/row.log" 2>&1 || true
runs=("$SCRATCH"/elsewhere/llama-row-42-*/)
[ -f "${runs[0]}run.json" ] && pass || fail "a card.yaml run is named after its directory: $(cat "$SCRATCH/row.log")"
expect_json "${runs[0]}run.json" "j['card']" "llama-row-42" "run.json names the row"

finish
