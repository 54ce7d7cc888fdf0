#!/bin/bash
# Card text that tries to run commands must arrive at the workload as plain text. The rendered
# local launch script is executed for real, with a stand-in workload that records its argv and
# environment.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
work="$SCRATCH/card"
mkdir -p "$work"
cp workloads/tiny-ddp/tiny-ddp.yaml "$work/"
cat >"$work/train.py" <<'PY'
import json, os, sys
json.dump({"argv": sys.argv[1:], "nccl": os.environ.get("HOSTILE_VALUE")}, sys.stdout)
PY
marker="$SCRATCH/pwned"
payloads=("\$(touch $marker)" "\`touch $marker\`" "it's" $'two\nlines' '"; touch '"$marker"'; "' '${HOME}')
sets=()
json_list=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "${payloads[@]}")
sets+=(--set "launch.args=$json_list")
sets+=(--set "launch.env.HOSTILE_VALUE=\$(touch $marker) \`id\` it's")

expect_status 0 "render hostile card" -- "$CCL_HARNESS" render -q "$work/tiny-ddp.yaml" "${sets[@]}" --out "$SCRATCH/out"
bash -n "$SCRATCH/out/launch.sh" && pass || fail "bash -n"
shellcheck "$SCRATCH/out/launch.sh" && pass || fail "shellcheck on hostile render"

result=$(RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 CCL_RUN_DIR="$SCRATCH/out" bash "$SCRATCH/out/launch.sh")
[ ! -e "$marker" ] && pass || fail "a payload executed"
expected=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "${payloads[@]}")
got=$(/usr/bin/python3 -c 'import json,sys; a=json.loads(sys.stdin.read())["argv"]; print(json.dumps(a[a.index("--trace-dir")+2:]))' <<<"$result")
[ "$got" = "$expected" ] && pass || fail "extra args arrived changed: $got vs $expected"
value=$(/usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["nccl"])' <<<"$result")
[ "$value" = "\$(touch $marker) \`id\` it's" ] && pass || fail "env value arrived changed: $value"

finish
