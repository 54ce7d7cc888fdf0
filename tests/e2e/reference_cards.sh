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
    # Some suite runs it (not just renders it): the framework suites name the card's directory.
    if grep -lq -- "$name" tests/e2e/framework_*.sh 2>/dev/null; then pass; else fail "$name: no tests/e2e/framework_*.sh runs it"; fi
done

finish
