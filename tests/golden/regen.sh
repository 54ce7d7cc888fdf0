#!/bin/bash
# Rewrites the golden renders under tests/golden/<card>.<cluster>/ from the current templates.
# Run it only when a change to templates or the renderer is intended, then review `git diff`.
#   tests/golden/regen.sh [path/to/ccl-harness]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
harness=${1:-$root/build/ccl-harness}
cd "$root"
cases=()
for card in workloads/*/*.yaml; do
    name=$(basename "$card" .yaml)
    if [ "$name" = tiny-ddp ]; then
        cases+=("$name.local" "$name.slurm-local" "$name.perlmutter")
    else
        cluster=$(sed -n 's/^  cluster: *//p' "$card" | head -n 1)
        cases+=("$name.${cluster:?$card has no launch.cluster}")
    fi
done
rm -rf tests/golden/*/
for case_name in "${cases[@]}"; do
    name=${case_name%.*}
    "$harness" render -q "workloads/$name/$name.yaml" --cluster "${case_name##*.}" --out "tests/golden/$case_name" >/dev/null
    rmdir "tests/golden/$case_name/logs"
    # The card's own entry point, the probe and the preflight are copied, not rendered: they are reviewed where they live.
    rm -f "tests/golden/$case_name/train.py" "tests/golden/$case_name/ccl_probe.py" "tests/golden/$case_name/ccl_preflight.py"
done
echo "regenerated ${#cases[@]} golden renders; review with: git diff --stat tests/golden"
