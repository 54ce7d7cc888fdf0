#!/bin/bash
# provenance.json and secret scrubbing on real local runs: secrets exported while a run executes,
# and printed by its workload, appear nowhere in the run directory; the record keeps the hosts'
# tools and the allowed environment, and the raw probe reports are gone.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"
hf_token="hf_e2eProvenanceTokenValue0123456789"
wandb_key="e2e0wandb0key0f00d0123456789abcdef012345"

provenance() { # provenance RUN_DIR EXPR: evaluates a Python expression over provenance.json (as p)
    /usr/bin/python3 -c 'import json,sys; p=json.load(open(sys.argv[1]+"/provenance.json")); print(eval(sys.argv[2]))' "$1" "$2"
}

# The tiny-ddp card beside a copy of its entry point that prints both secrets first; and one
# that prints them and fails.
work="$SCRATCH/card"
mkdir -p "$work"
cp workloads/tiny-ddp/tiny-ddp.yaml "$work/"
/usr/bin/python3 - workloads/tiny-ddp/train.py "$work" <<'PY'
import sys
source = open(sys.argv[1]).read()
leak = 'print("secrets:", os.environ["HF_TOKEN"], repr(os.environ["WANDB_API_KEY"]), flush=True)\n'
assert "import time\n" in source
open(sys.argv[2] + "/leaky_train.py", "w").write(source.replace("import time\n", "import time\n" + leak, 1))
# The failing one also leaves what is not a probe report where the reports go.
open(sys.argv[2] + "/leaky_fail.py", "w").write("import os, sys\n" + leak + """
probe = os.path.join(os.environ["CCL_RUN_DIR"], "probe")
os.makedirs(probe, exist_ok=True)
open(os.path.join(probe, "junk-7.json"), "w").write('{"hostname": ')
if not os.path.lexists(os.path.join(probe, "link-8.json")):
    os.symlink(sys.argv[0], os.path.join(probe, "link-8.json"))
print("failing with", os.environ["HF_TOKEN"], flush=True)
sys.exit(3)
""")
PY

no_secrets_in() { # no_secrets_in RUN_DIR WHAT
    local found
    found=$(grep -rlF -e "$hf_token" -e "$wandb_key" "$1" || true)
    [ -z "$found" ] && pass || fail "$2: a secret value is still in: $found"
}

# 1. A completed run.
expect_status 0 "leaky tiny-ddp runs" -- env HF_TOKEN="$hf_token" WANDB_API_KEY="$wandb_key" API_KEY=abc \
    "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --set launch.script=leaky_train.py --results "$results"
expect_output "redactions reported" "occurrence(s) of secret values replaced by [REDACTED]"
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = completed ] && pass || fail "state is not completed: $OUT"
no_secrets_in "$run" "completed run"
grep -qF "secrets: [REDACTED] '[REDACTED]'" "$run/logs/rank_0.log" && pass || fail "rank_0.log lacks [REDACTED]: $(head -3 "$run/logs/rank_0.log")"
grep -qF "[REDACTED]" "$run/logs/rank_1.log" && pass || fail "rank_1.log lacks [REDACTED]"
# ...and so is the bundle that run packed, every file of it, compressed or not.
bundle="${run%/}.tar.zst"
mkdir -p "$SCRATCH/unpacked"
tar --zstd -xf "$bundle" -C "$SCRATCH/unpacked" && pass || fail "no bundle at $bundle"
no_secrets_in "$SCRATCH/unpacked" "the bundle"
grep -rqF "[REDACTED]" "$SCRATCH/unpacked" && pass || fail "the bundle's logs lack [REDACTED]"
[ ! -e "$run/rendered/probe" ] && pass || fail "raw probe reports left in rendered/probe"
[ -f "$run/rendered/ccl_probe.py" ] && pass || fail "the probe is not among the rendered files"
[ -f "$run/provenance.json" ] && pass || fail "no provenance.json"

[ "$(provenance "$run" 'p["format"], p["harness"]["version"], p["run"]["state"], p["run"]["cluster"]')" = "(1, '0.1.0', 'completed', 'local')" ] &&
    pass || fail "provenance header: $(provenance "$run" 'p["format"], p["harness"], p["run"]')"
[ "$(provenance "$run" '[(h["hostname"], h["ranks"]) for h in p["hosts"]]')" = "[('$(/usr/bin/python3 -c 'import socket; print(socket.gethostname())')', [0, 1])]" ] &&
    pass || fail "hosts: $(provenance "$run" 'p["hosts"]')"
[ "$(provenance "$run" 'p["hosts"][0]["tools"]["torch"].startswith("1.13") and p["hosts"][0]["tools"]["python"].startswith("3.")')" = True ] &&
    pass || fail "tools: $(provenance "$run" 'p["hosts"][0]["tools"]')"
[ "$(provenance "$run" 'sorted(k for k in p["environment"] if k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK"))')" = \
    "['LOCAL_RANK', 'MASTER_ADDR', 'MASTER_PORT', 'RANK', 'WORLD_SIZE']" ] && pass || fail "environment: $(provenance "$run" 'p["environment"]')"
[ "$(provenance "$run" '[k for k in p["environment"] if k in ("HF_TOKEN", "WANDB_API_KEY", "API_KEY", "PATH", "HOME")]')" = "[]" ] &&
    pass || fail "environment keeps names it must drop: $(provenance "$run" 'list(p["environment"])')"
[ "$(provenance "$run" 'sorted(i["path"] for i in p["inputs"] if i["path"].startswith(("templates/", "clusters/")))')" = \
    "['clusters/local.yaml', 'templates/common/ccl_probe.py', 'templates/torch-ddp/local/launch.sh.mustache']" ] &&
    pass || fail "inputs: $(provenance "$run" 'p["inputs"]')"
[ "$(provenance "$run" 'all(len(i["sha256"]) == 64 for i in p["inputs"])')" = True ] && pass || fail "input sha256s"
[ "$(provenance "$run" 'p["harness"]["commit"] is None or len(p["harness"]["commit"]) == 40')" = True ] && pass ||
    fail "harness commit: $(provenance "$run" 'p["harness"]')"
[ "$(provenance "$run" 'p["harness"]["patch"] == ("harness.patch" if p["harness"]["dirty"] else None)')" = True ] && pass ||
    fail "harness patch: $(provenance "$run" 'p["harness"]')"
if [ "$(provenance "$run" 'p["harness"]["dirty"]')" = True ]; then
    [ -s "$run/harness.patch" ] && pass || fail "dirty checkout without harness.patch"
fi
[ "$(provenance "$run" 'p["container"], p["sources"], p["scheduler"]["job_ids"]')" = "(None, [], [])" ] && pass ||
    fail "container, sources, scheduler: $(provenance "$run" 'p["container"], p["sources"], p["scheduler"]')"

# 2. A failed run: its logs and its failure reason (a log tail) are scrubbed too.
expect_status 1 "leaky failing run" -- env HF_TOKEN="$hf_token" WANDB_API_KEY="$wandb_key" \
    "$CCL_HARNESS" run "$work/tiny-ddp.yaml" --set launch.script=leaky_fail.py --results "$results" --grace 1
run=$(latest_run)
[ "$(run_json "$run" 'r["state"]')" = failed ] && pass || fail "state after a failing rank: $(run_json "$run" 'r["state"]')"
no_secrets_in "$run" "failed run"
# The first rank to fail stops the other, which may not have printed yet.
grep -rqF "[REDACTED]" "$run/logs" && pass || fail "failed run's logs lack [REDACTED]"
[ "$(run_json "$run" '"[REDACTED]" in r["reason"]')" = True ] && pass || fail "failure reason: $(run_json "$run" 'r["reason"]')"
[ "$(provenance "$run" 'p["run"]["state"], len(p["hosts"]) == 1')" = "('failed', True)" ] && pass ||
    fail "failed run's provenance: $(provenance "$run" 'p["run"], p["hosts"]')"
[ ! -e "$run/rendered/probe" ] && pass || fail "raw probe reports left after a failed run"
expect_output "a bad probe report is a warning" "junk-7.json: not a probe report"
[ -f "$run/rendered/leaky_fail.py" ] && pass || fail "a link among the probe reports was followed on removal"

# 3. Without secrets in the environment nothing is redacted, and the run still completes.
expect_status 0 "tiny-ddp without secrets" -- env -u HF_TOKEN -u WANDB_API_KEY \
    "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
run=$(latest_run)
if grep -rqF "[REDACTED]" "$run/logs"; then fail "redacted without a secret"; else pass; fi
[ "$(provenance "$run" 'p["run"]["state"]')" = completed ] && pass || fail "plain run's provenance"

finish
