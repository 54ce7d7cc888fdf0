#!/bin/bash
# `ccl-harness results`: real local runs indexed into the SQLite store, queried, re-indexed after a
# run directory is removed, a damaged database refused and rebuilt, concurrent indexers, and an
# indexer killed mid-write.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"
db="$SCRATCH/results.db"
store() { "$CCL_HARNESS" results --store "$db" "$@"; }

for _ in 1 2; do
    expect_status 0 "tiny-ddp runs locally" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --cluster local --results "$results"
done
# run records what it ran in the per-user store ($CCL_HARNESS_STORE, set by lib.sh) as it ends.
expect_status 0 "the per-user store already holds both runs" -- "$CCL_HARNESS" results list --json
echo "$OUT" >"$SCRATCH/user-list.json"
expect_json "$SCRATCH/user-list.json" 'sorted(r["state"] for r in j["runs"])' "['completed', 'completed']"
expect_status 0 "show has the run's pins" -- "$CCL_HARNESS" results show "$(basename "$(latest_run)")" --json
expect_output "the harness commit" '"ccl-harness"'
# A store that cannot be written never fails the run: a warning says how to add it later.
expect_status 0 "a run with an unwritable store" -- env CCL_HARNESS_STORE=/proc/no-such-dir/results.db \
    "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --cluster local --results "$SCRATCH/results-unwritable"
expect_output "says the store was not updated" "the results store was not updated"
expect_output "and how to add it" "ccl-harness results index"
expect_status 0 "CCL_HARNESS_STORE=none records nothing" -- env CCL_HARNESS_STORE=none \
    "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --cluster local --results "$SCRATCH/results-none"
if grep -q "results store" <<<"$OUT"; then fail "a store was written to: $OUT"; else pass; fi
[ ! -e none ] && pass || fail "a store file named none"
expect_status 2 "results with the store turned off" -- env CCL_HARNESS_STORE=none "$CCL_HARNESS" results list
expect_output "results says the store is off" "the results store is turned off (\$CCL_HARNESS_STORE=none): give --store PATH"
[ ! -e none ] && pass || fail "results made a store file named none"

# run --reuse: the same card again is not run; the newest completed run rendered byte for byte
# alike, with a verified bundle, is the result.
before=$(ls "$results" | grep -c .)
"$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --cluster local --results "$results" --reuse --json \
    >"$SCRATCH/reuse.json" 2>"$SCRATCH/reuse.err" && pass || fail "run --reuse of what already ran: $(cat "$SCRATCH/reuse.err")"
grep -q "its bundle verifies: nothing runs" "$SCRATCH/reuse.err" && pass || fail "reuse not said: $(cat "$SCRATCH/reuse.err")"
expect_json "$SCRATCH/reuse.json" 'j["reused"]' True
expect_json "$SCRATCH/reuse.json" 'j["run_dir"]' "$(latest_run | sed 's:/$::')"
expect_eq "no new run directory" "$before" "$(ls "$results" | grep -c .)"
expect_status 0 "another batch size is another run" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --cluster local \
    --results "$SCRATCH/results-reuse" --reuse --set workload.data.batch_size=4
expect_output "says why it runs" "no earlier completed run rendered alike"
expect_eq "it ran" 1 "$(ls -d "$SCRATCH"/results-reuse/*/ | grep -c .)"
# A reused bundle must verify: a damaged one is skipped and the run goes ahead.
newest=$(latest_run)
cp "${newest%/}.tar.zst" "$SCRATCH/kept.tar.zst"
truncate -s 2000 "${newest%/}.tar.zst"
expect_status 0 "run --reuse past a damaged bundle" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --cluster local \
    --results "$SCRATCH/results-reuse" --reuse
expect_output "the damaged bundle is skipped" "$(basename "$newest")'s bundle"
cp "$SCRATCH/kept.tar.zst" "${newest%/}.tar.zst"
expect_status 0 "--reuse with the store turned off runs" -- env CCL_HARNESS_STORE=none "$CCL_HARNESS" run \
    workloads/tiny-ddp/tiny-ddp.yaml --cluster local --results "$SCRATCH/results-none" --reuse
expect_output "says so" "the results store is turned off"

expect_status 0 "index two runs" -- store index "$results"
expect_output "two added" "2 added, 0 updated, 0 dropped"
expect_status 0 "index again" -- store index "$results"
expect_output "nothing changes" "0 added, 0 updated, 0 dropped, 2 unchanged"

expect_status 0 "list --where state" -- store list --where state=completed --where cluster=local --metric avg_step_time --json
echo "$OUT" | tee "$SCRATCH/list.out" >"$SCRATCH/list.json"
expect_json "$SCRATCH/list.json" 'len(j["runs"])' 2
expect_json "$SCRATCH/list.json" 'all(isinstance(r["avg_step_time"], float) for r in j["runs"])' True
family=$(/usr/bin/python3 -c 'import yaml,sys; print(yaml.safe_load(open(sys.argv[1]))["workload"]["model"]["model_family"])' \
    "$(latest_run)/card.yaml")
expect_status 0 "list --where a card path" -- store list --where "workload.model.model_family=$family" --csv
expect_eq "csv rows: $OUT" 3 "$(wc -l <<<"$OUT")"
expect_status 0 "no match" -- store list --where workload.model.model_family=nonesuch --csv
expect_eq "csv header only" 1 "$(wc -l <<<"$OUT")"
expect_status 2 "bad field" -- store list --where 'not a field=1'
expect_output "names the clause" "--where not a field=1"
expect_status 2 "bad date" -- store list --since yesterday
expect_status 2 "unknown metric" -- store list --metric nonesuch
run_id=$(basename "$(latest_run)")
expect_status 0 "show" -- store show "$run_id" --json
expect_output "card fields" '"card_fields"'
expect_status 0 "history" -- store history tiny-ddp --metric avg_step_time
expect_output "two runs" "2 runs"

rm -rf "$(latest_run)"
expect_status 0 "re-index after a removed run" -- store index "$results"
expect_output "one dropped" "0 added, 0 updated, 1 dropped"

cp "$db" "$SCRATCH/good.db"
printf 'garbage garbage garbage garbage' | dd of="$db" bs=1 seek=0 conv=notrunc status=none
rm -f "$db-wal" "$db-shm"
expect_status 2 "a damaged database is one clear error" -- store list
expect_output "names the file" "$db"
expect_eq "one line: $OUT" 1 "$(wc -l <<<"$OUT")"
expect_status 0 "--rebuild recovers" -- store index --rebuild "$results"
expect_output "rebuilt" "1 added"

# Six writers at once: all succeed, one row per run.
rm -f "$db" "$db-wal" "$db-shm"
pids=()
for i in 1 2 3 4 5 6; do
    store index "$results" >"$SCRATCH/writer$i.log" 2>&1 &
    pids+=($!)
done
for pid in "${pids[@]}"; do
    if wait "$pid"; then pass; else fail "a concurrent indexer failed: $(cat "$SCRATCH"/writer*.log)"; fi
done
expect_status 0 "count after concurrent writers" -- store list --json
echo "$OUT" >"$SCRATCH/list.json"
expect_json "$SCRATCH/list.json" 'len(j["runs"])' 1

# kill -9 at 0.2 s, mid-write or after it: the database still opens, holding whole transactions only.
source_run=$(latest_run)
for i in $(seq 1 300); do cp -r "$source_run" "$results/copy-$i"; done
"$CCL_HARNESS" results --store "$db" index "$results" >/dev/null 2>&1 &
pid=$!
sleep 0.2
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
expect_status 0 "the database opens after kill -9" -- store list --where "card=tiny-ddp" --json
echo "$OUT" >"$SCRATCH/list.json"
expect_json "$SCRATCH/list.json" 'len(j["runs"]) in (1, 301)' True
finish
