#!/bin/bash
# Every reference card in workloads/ is covered: its framework at its pinned ref has a contract
# (docs/contracts/<framework>-<ref>.yaml) whose citations name real files, with the keys
# docs/contracts/README.md lists, and some end-to-end suite runs the card. A new card without them
# fails here, not on a cluster.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
py=/usr/bin/python3

for card in workloads/*/*.yaml; do
    name=$(basename "$card" .yaml)
    [ "$name" = tiny-ddp ] && continue # the real workload: run_local.sh, run_slurm.sh run it for real
    # The card's framework as the harness names it, and the ref it pins.
    if "$CCL_HARNESS" explain "$card" --json >"$SCRATCH/$name.json" 2>"$SCRATCH/$name.err"; then pass; else fail "$name: explain: $(cat "$SCRATCH/$name.err")"; fi
    read -r framework ref repo < <($py -c '
import json, sys
values = {v["field"]: v["value"] for v in json.load(open(sys.argv[1]))["values"]}
repo = values.get("source.repo", "").rstrip("/").rsplit("/", 1)[-1].removesuffix(".git").lower()
print(values.get("framework", ""), values.get("source.ref", ""), repo)' "$SCRATCH/$name.json") || true
    if [ -z "$framework" ] || [ -z "$ref" ]; then
        fail "$name: explain gives no framework or source.ref"
        continue
    fi
    # Named after the framework, or after the source repository where that is another project
    # (vLLM's TPU backend is tpu-inference).
    contract="docs/contracts/$framework-$ref.yaml"
    [ -f "$contract" ] || contract="docs/contracts/$repo-$ref.yaml"
    if [ ! -f "$contract" ]; then
        fail "$name: no contract docs/contracts/$framework-$ref.yaml (or $repo-$ref.yaml) for $framework at $ref"
    else
        pass
        problems=$($py - "$contract" "$ref" <<'PY'
import re, sys, yaml
path, ref = sys.argv[1:]
c = yaml.safe_load(open(path))
out = []
for key in ("framework", "ref", "commit", "repo", "entry", "parser", "options", "traces", "window"):
    if key not in c:
        out.append(f"no {key}")
if str(c.get("ref")) != ref:
    out.append(f"says ref {c.get('ref')}, the card pins {ref}")
# The commit the ref names, or why it could not be read (then every citation says which
# version was read instead).
if not re.fullmatch(r"[0-9a-f]{40}", str(c.get("commit", ""))) and not str(c.get("commit", "")).startswith("unverified"):
    out.append("commit is neither a 40-hex SHA nor 'unverified: why'")
options = c.get("options") or []
if not options:
    out.append("lists no options")
for o in options:
    if not o.get("name") or "source" not in o:
        out.append(f"option without name or source: {o}")
    # path:line, or a file (then a symbol or the quoted source line), or 'unverified: why'.
    elif not re.search(r"\S+:\d+|^unverified|^[\w.-]+(/[\w.-]+)*\.\w+[\s:]", str(o["source"])):
        out.append(f"{o['name']}: source {o['source']!r} is neither path:line, 'path symbol: quoted source' nor 'unverified: why'")
for t in c.get("traces") or []:
    if "source" not in t:
        out.append(f"trace rule without source: {t}")
print("\n".join(out))
PY
)
        if [ -z "$problems" ]; then pass; else fail "$contract:"$'\n'"$problems"; fi
    fi
    # Every option its launch.args passes is one the contract lists (validate --strict warns otherwise).
    expect_status 0 "$name: validate --strict" -- "$CCL_HARNESS" validate --strict "$card"
    if grep -q "is not among the options" <<<"$OUT"; then fail "$name: launch.args outside its contract: $OUT"; else pass; fi
    # Some suite runs it (not just renders it): the framework suites name the card's directory.
    if grep -lq -- "$name" tests/e2e/framework_*.sh 2>/dev/null; then pass; else fail "$name: no tests/e2e/framework_*.sh runs it"; fi
done

# A misspelt option in launch.args is named before any job waits for nodes: a warning (the
# framework may accept what its contract does not list), with the option it resembles.
megatron=workloads/deepseek-v3-16b-megatron-perlmutter/deepseek-v3-16b-megatron-perlmutter.yaml
expect_status 0 "launch.args typo: still valid" -- "$CCL_HARNESS" validate --strict "$megatron" \
    --set 'launch.args=[--num-layers=2, --hiden-size=64]'
expect_output "the typo is named with its likely option" '"--hiden-size=64" is not among the options megatron-lm-core_v0.15.3.yaml lists for megatron-lm at core_v0.15.3 (did you mean "--hidden-size"?)'
if grep -q -- '"--num-layers=2" is not' <<<"$OUT"; then fail "a listed option was reported: $OUT"; else pass; fi
maxtext=workloads/llama-3.1-8b-maxtext-tpu-v6e-16/llama-3.1-8b-maxtext-tpu-v6e-16.yaml
expect_status 0 "pyconfig key typo" -- "$CCL_HARNESS" validate --strict "$maxtext" --set 'launch.args=[stpes=4]'
expect_output "a pyconfig key is checked as key=value" '"stpes=4" is not among the options maxtext-tpu-recipes-v0.1.4.yaml'
expect_status 0 "validate --strict --json carries it" -- "$CCL_HARNESS" validate --strict --json "$maxtext" --set 'launch.args=[stpes=4]'
expect_output "as a warning on launch.args" '"field": "launch.args"'
# Hydra overrides (torchxla's torchprime) are checked as key=value too, dotted keys included.
torchxla=workloads/llama-3.1-8b-torchxla-tpu/llama-3.1-8b-torchxla-tpu.yaml
expect_status 0 "Hydra key typo" -- "$CCL_HARNESS" validate --strict "$torchxla" --set 'launch.args=[task.max_stpes=4]'
expect_output "a Hydra key is checked as key=value" '"task.max_stpes=4" is not among the options torchxla-ea8f14b64a1f14bcb5b6603dd3d41911d414c5f7.yaml'

finish
