#!/bin/bash
# `ccl-harness compare` like a user: three real tiny-ddp runs with different cards, compared as
# packed bundles, an unpacked bundle and a run directory; the table, --json, and the --html page
# loaded in a real headless browser (Debian's chromium: CI installs it with .ci/setup), then the
# ways input goes wrong.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
results="$SCRATCH/results"

# 1. Three real runs: the step count and batch size differ, so the cards and the step times do.
bundles=()
for point in "10 8" "12 32" "14 16"; do
    read -r steps batch <<<"$point"
    expect_status 0 "tiny-ddp run (steps $steps, batch $batch)" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml \
        --results "$results" --set launch.steps="$steps" --set workload.data.batch_size="$batch"
    bundle=$(sed -n 's/^ *bundle: \([^ ]*\).*/\1/p' <<<"$OUT")
    if [ -f "$bundle" ]; then pass; else fail "no bundle in the run's output: $OUT"; fi
    bundles+=("$bundle")
done

# 2. The table for people.
expect_status 0 "compare three bundles" -- "$CCL_HARNESS" compare "${bundles[@]}"
expect_output "ranking" "Ranking by avg_step_time, fastest first"
expect_output "launch.steps differs" "launch.steps"
expect_output "batch_size differs" "workload.data.batch_size"
expect_output "metrics.json read" "metrics.json"
expect_output "throughput ranking" "Ranking by throughput per device, highest first"
expect_output "labelled by the differing values" "steps=12 bs=32"
expect_output "batch sizes differ, said" "note: the batch sizes differ (8, 32, 16)"
expect_output "mfu collapsed into one note" "mfu: n/a for 3 of 3 runs"
if grep -q "^  trace_url" <<<"$OUT"; then fail "trace_url compared: $OUT"; else pass; fi

# 3. --json for scripts: ranking by step time, the breakdown adds up, only differing fields.
"$CCL_HARNESS" compare "${bundles[@]}" --json >"$SCRATCH/compare.json" && pass || fail "compare --json"
if /usr/bin/python3 - "$SCRATCH/compare.json" <<'PY'; then pass; else fail "compare --json content"; fi
import json, sys
c = json.load(open(sys.argv[1]))
runs = {r["name"]: r for r in c["runs"]}
assert len(runs) == 3, runs.keys()
steps = [runs[n]["breakdown"]["step"] for n in c["ranking"]]
assert all(s is not None and s > 0 for s in steps) and steps == sorted(steps), steps
for r in c["runs"]:
    b = r["breakdown"]
    assert abs(b["compute"] + b["exposed"] - b["step"]) < 1e-12, b
    m = r["metrics"]
    assert abs(b["overlapped"] - m["total_communication_time"]["value"] * m["compute_comm_overlap"]["value"] / 100) < 1e-12
    assert r["kind"] == "bundle" and r["metrics_source"] == "metrics.json", r
    assert m["mfu"]["value"] is None and m["mfu"]["why"], m["mfu"]  # CPU: no peak FLOP/s known
paths = {d["path"]: d["values"] for d in c["differences"]}
assert paths["launch.steps"] == ["10", "12", "14"], paths
assert paths["workload.data.batch_size"] == ["8", "32", "16"], paths
assert "trace_url" not in paths and "description" not in paths, paths
assert c["ignored_paths"] == ["trace_url"]
# At a glance: labels from the differing values, throughput per device (tokens/s/device from the
# card: batch_size x seq_len / step / total_count), per-step spread and per-rank times from the
# traces, communication by collective, the n/a mfu collapsed into one note.
labels = [r["label"] for r in c["runs"]]
assert labels == ["steps=10 bs=8", "steps=12 bs=32", "steps=14 bs=16"], labels
for r in c["runs"]:
    t = r["throughput"]
    assert t["unit"] == "tokens/s/device", t
    bs = int(paths["workload.data.batch_size"][c["runs"].index(r)])
    assert abs(t["value"] - bs * 32 / r["breakdown"]["step"] / 2) < 1e-6 * t["value"], (t, r["breakdown"])
    s = r["step_spread"]
    assert s and s["min"] <= s["median"] <= s["max"] and s["steps"] >= 2, s
    assert len(r["ranks"]) == 2 and all(len(k["steps"]) >= 1 for k in r["ranks"]), r["ranks"]
    assert r["communication_by_collective"], r  # gloo all-reduce on CPU
    assert set(r["communication_by_collective"]) <= {"all_reduce", "all_gather", "broadcast", "barrier", "reduce", "reduce_scatter", "all_to_all", "send_recv", "other"}
tp = [runs[n]["throughput"]["value"] for n in c["throughput_ranking"]]
assert tp == sorted(tp, reverse=True), tp
assert "batch sizes differ" in c["ranking_note"], c["ranking_note"]
mfu = [m for m in c["missing"] if m["metric"] == "mfu"]
assert len(mfu) == 1 and len(mfu[0]["runs"]) == 3 and mfu[0]["text"].startswith("mfu: n/a for 3 of 3 runs: "), c["missing"]
PY

# 4. Every kind of input at once: a run directory, an unpacked bundle, a packed bundle.
unpacked="$SCRATCH/unpacked"
mkdir -p "$unpacked"
tar --zstd -xf "${bundles[1]}" -C "$unpacked"
name=$(basename "${bundles[1]}" .tar.zst)
run_dir="$results/$(basename "${bundles[0]}" .tar.zst)"
"$CCL_HARNESS" compare "$run_dir" "$unpacked/$name" "${bundles[2]}" --json >"$SCRATCH/mixed.json" && pass ||
    fail "compare a run directory, an unpacked and a packed bundle"
if /usr/bin/python3 - "$SCRATCH/mixed.json" <<'PY'; then pass; else fail "mixed inputs: $(cat "$SCRATCH/mixed.json")"; fi
import json, sys
c = json.load(open(sys.argv[1]))
assert [r["kind"] for r in c["runs"]] == ["run directory", "bundle directory", "bundle"], c["runs"]
assert all(r["breakdown"]["step"] for r in c["runs"])
PY

# 5. The page, in a real browser.
page="$SCRATCH/compare.html"
expect_status 0 "compare --html" -- "$CCL_HARNESS" compare "${bundles[@]}" --html "$page"
expect_output "page named" "page: $page"
if grep -qiE '<script|src=|href=|@import|url\(' "$page"; then fail "the page loads or runs something: $(grep -oiE '<script|src=|href=|@import|url\(' "$page")"; else pass; fi
if command -v chromium >/dev/null; then
    browser=(chromium --headless --no-sandbox --disable-gpu --user-data-dir="$SCRATCH/chromium-profile"
             --enable-logging=stderr --v=0)
    timeout 120 "${browser[@]}" --dump-dom "file://$page" >"$SCRATCH/dom.html" 2>"$SCRATCH/dom.log" && pass ||
        fail "chromium --dump-dom: $(tail -5 "$SCRATCH/dom.log")"
    # The page has no script, so nothing can throw; the browser still reports a blocked load
    # (the page's Content-Security-Policy forbids all) or a parse problem on the console.
    if grep -E 'CONSOLE|Uncaught|Refused to' "$SCRATCH/dom.log"; then fail "console messages (above)"; else pass; fi
    if /usr/bin/python3 - "$SCRATCH/dom.html" <<'PY'; then pass; else fail "the page as the browser built it"; fi
from html.parser import HTMLParser
import sys
class Charts(HTMLParser):
    def __init__(self):
        super().__init__()
        self.svg = None
        self.found = {}
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svg = a.get("id")
            self.found.setdefault(self.svg, [])
        elif tag == "table" and a.get("id"):
            self.found[a["id"]] = []
        elif tag == "g" and self.svg:
            self.found[self.svg].append(a.get("class", ""))
    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None
p = Charts()
p.feed(open(sys.argv[1]).read())
f = p.found
for want in ("ranking", "chart-breakdown", "chart-scatter", "differences"):
    assert want in f, (want, f.keys())
assert f["chart-breakdown"].count("bar") == 3, f["chart-breakdown"]
assert "chart-mfu" not in f, f.keys()  # CPU: mfu is n/a in every run, said once in a note
assert f["chart-scatter"].count("point") == 3, f["chart-scatter"]
assert f["chart-spread"].count("spread") == 3, f["chart-spread"]
assert f["chart-timeline"].count("line") == 3, f["chart-timeline"]
for want in ("throughput", "per-rank", "comm-collective"):
    assert want in f, (want, f.keys())
PY
    # The labels, the throughput order and the collapsed note, as the browser built them.
    if /usr/bin/python3 - "$SCRATCH/dom.html" "$SCRATCH/compare.json" <<'PY'; then pass; else fail "labels, ranking or note on the page"; fi
from html.parser import HTMLParser
import json, sys
class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.table = None
        self.rows = []       # (data-run, label) of #throughput, in order
        self.cell = None
        self.notes = []
        self.in_note = False
        self.na_bars = 0
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.table = a.get("id")
        elif tag == "tr" and self.table == "throughput" and "data-run" in a:
            self.rows.append([a["data-run"], ""])
        elif tag == "td" and self.table == "throughput" and "label" in a.get("class", ""):
            self.cell = "label"
            assert a.get("title") == self.rows[-1][0], a  # the id on hover
        elif tag == "li" and a.get("class") == "missing-note":
            self.in_note = True
            self.notes.append("")
        elif tag == "g" and a.get("class") == "bar na":
            self.na_bars += 1
    def handle_endtag(self, tag):
        if tag == "td":
            self.cell = None
        elif tag == "li":
            self.in_note = False
        elif tag == "table":
            self.table = None
    def handle_data(self, data):
        if self.cell == "label":
            self.rows[-1][1] += data
        if self.in_note:
            self.notes[-1] += data
p = Page()
p.feed(open(sys.argv[1]).read())
c = json.load(open(sys.argv[2]))
assert [r[0] for r in p.rows] == c["throughput_ranking"], (p.rows, c["throughput_ranking"])
label = {r["name"]: r["label"] for r in c["runs"]}
assert [r[1] for r in p.rows] == [label[n] for n in c["throughput_ranking"]], p.rows
assert sorted(r[1] for r in p.rows) == ["steps=10 bs=8", "steps=12 bs=32", "steps=14 bs=16"], p.rows
assert any(n.startswith("mfu: n/a for 3 of 3 runs: ") for n in p.notes), p.notes
assert p.na_bars == 0, p.na_bars  # no row of red n/a
PY
    shot="$CCL_TEST_TMP/compare/compare.png"
    timeout 120 "${browser[@]}" --screenshot="$shot" --window-size=1200,1600 "file://$page" >"$SCRATCH/shot.log" 2>&1 || true
    if [ -s "$shot" ] && [ "$(head -c 8 "$shot" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then pass; else
        fail "no PNG screenshot at $shot: $(tail -5 "$SCRATCH/shot.log")"
    fi
    # The screenshot is the window's size and not blank: decoded, its rows hold many colours.
    if /usr/bin/python3 - "$shot" <<'PY'; then pass; else fail "the screenshot is blank or the wrong size: $shot"; fi
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
pos, idat, size = 8, b"", None
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        size = struct.unpack(">II", body[:8])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + length
assert size == (1200, 1600), size
raw = zlib.decompress(idat)
assert len(set(raw)) > 40, len(set(raw))  # a white page decodes to a handful of byte values
PY
else
    fail "chromium is not installed: the page must be checked in a real browser (.ci/setup installs it: apt-get install chromium)"
fi

# 5b. A sweep directory: each point with its overrides, in compare and in status.
expect_status 0 "a two-point sweep" -- "$CCL_HARNESS" sweep workloads/tiny-ddp/tiny-ddp.yaml --results "$SCRATCH/sweeps" \
    --vary workload.data.batch_size=8,16
sweep_dir=$(find "$SCRATCH/sweeps" -mindepth 2 -maxdepth 2 -name sweep.json -printf '%h\n' | head -1)
[ -n "$sweep_dir" ] && pass || fail "no sweep directory under $SCRATCH/sweeps"
"$CCL_HARNESS" compare "$sweep_dir" --json >"$SCRATCH/sweep-compare.json" && pass || fail "compare a sweep directory"
if /usr/bin/python3 - "$SCRATCH/sweep-compare.json" <<'PY'; then pass; else fail "sweep compare: $(cat "$SCRATCH/sweep-compare.json")"; fi
import json, sys
c = json.load(open(sys.argv[1]))
assert [r["overrides"] for r in c["runs"]] == [["workload.data.batch_size=8"], ["workload.data.batch_size=16"]], c["runs"]
assert [r["label"] for r in c["runs"]] == ["bs=8", "bs=16"], [r["label"] for r in c["runs"]]
assert all(r["sweep"] for r in c["runs"])
PY
expect_status 0 "compare a sweep directory, as a table" -- "$CCL_HARNESS" compare "$sweep_dir" --html "$SCRATCH/sweep.html"
expect_output "the points' overrides" "workload.data.batch_size=16"
expect_status 0 "status of a sweep directory" -- "$CCL_HARNESS" status "$sweep_dir"
expect_output "status shows the overrides" "point: workload.data.batch_size=8"

# 6. Bad input: one clear error, exit 2, and an existing page left as it was.
echo "previous page" >"$page"
expect_status 2 "a single input" -- "$CCL_HARNESS" compare "${bundles[0]}" --html "$page"
expect_output "needs two" "compare needs two or more runs or bundles, got 1"
expect_status 2 "a missing path" -- "$CCL_HARNESS" compare "${bundles[0]}" "$SCRATCH/no-such.tar.zst" --html "$page"
expect_output "names the path" "no-such.tar.zst: no such file or directory"
mkdir -p "$SCRATCH/not-a-run"
echo hello >"$SCRATCH/not-a-run/notes.txt"
expect_status 2 "a directory that is neither bundle nor run" -- "$CCL_HARNESS" compare "${bundles[0]}" "$SCRATCH/not-a-run"
expect_output "says what it expected" "neither a bundle (<name>/ with <name>.yaml and manifest.json) nor a run directory"
echo "not an archive" >"$SCRATCH/fake.tar.zst"
expect_status 2 "a file that is not an archive" -- "$CCL_HARNESS" compare "${bundles[0]}" "$SCRATCH/fake.tar.zst"
expect_output "names the archive" "fake.tar.zst"
# A tampered bundle: a faster step time written into metrics.json after packing.
tampered="$SCRATCH/tampered/$name"
mkdir -p "$SCRATCH/tampered"
cp -r "$unpacked/$name" "$tampered"
/usr/bin/python3 - "$tampered/metrics.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["metrics"]["avg_step_time"]["value"] = 1e-6
json.dump(m, open(sys.argv[1], "w"))
PY
expect_status 2 "a tampered bundle is refused" -- "$CCL_HARNESS" compare "${bundles[0]}" "$tampered" --html "$page"
expect_output "says why" "the bundle does not match its manifest"
expect_output "points at verify" "ccl-harness verify"
[ "$(cat "$page")" = "previous page" ] && pass || fail "a refused comparison changed the page"
expect_status 2 "no inputs" -- "$CCL_HARNESS" compare

# A results directory compares every completed run in it (and its sweeps), as `status` lists them.
expect_status 0 "compare a results directory" -- "$CCL_HARNESS" compare "$results" --json
if /usr/bin/python3 - "$OUT" <<'PY'; then pass; else fail "compare RESULTS_DIR --json: $OUT"; fi
import json, sys
c = json.loads(sys.argv[1])
assert len(c["runs"]) >= 3, [r["name"] for r in c["runs"]]
PY
mkdir -p "$SCRATCH/empty-results/nothing"
expect_status 2 "a directory with no runs" -- "$CCL_HARNESS" compare "$SCRATCH/empty-results"

# status's filters narrow a results directory for both commands: a fourth run of another name,
# then the runs of one card, of a time window, and filters that keep nothing.
expect_status 0 "a run of another name" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results" \
    --name other-ddp --set launch.steps=10 --no-pack
expect_status 0 "status --card" -- "$CCL_HARNESS" status "$results" --card 'tiny-*'
expect_output "says what matched" "3 of 4 runs match --card tiny-*"
if grep -q "other-ddp" <<<"$OUT"; then fail "status --card kept other-ddp: $OUT"; else pass; fi
expect_status 0 "status --state and --since, from another directory" -- \
    bash -c 'cd / && "$0" status "$1" --state completed,failed --since 1h --json' "$CCL_HARNESS" "$results"
if /usr/bin/python3 - "$OUT" <<'PY'; then pass; else fail "status --json filtered: $OUT"; fi
import json, sys
s = json.loads(sys.argv[1])
assert s["total_runs"] == 4 and len(s["runs"]) == 4, s
assert all(r["state"] == "completed" for r in s["runs"]), s
PY
expect_status 0 "status --until before every run" -- "$CCL_HARNESS" status "$results" --until 2000-01-01
expect_output "nothing matches" "0 of 4 runs match --until 2000-01-01"
expect_status 0 "compare RESULTS_DIR --card" -- "$CCL_HARNESS" compare "$results" --card 'tiny-*' --since 2h --json
if /usr/bin/python3 - "$OUT" <<'PY'; then pass; else fail "compare --card --json: $OUT"; fi
import json, sys
c = json.loads(sys.argv[1])
assert len(c["runs"]) == 3 and c["not_matching"] == 1, ([r["name"] for r in c["runs"]], c["not_matching"])
assert not any(r["name"].startswith("other-ddp") for r in c["runs"]), c["runs"]
PY
expect_status 0 "compare RESULTS_DIR --card (text)" -- "$CCL_HARNESS" compare "$results" --card 'tiny-*'
expect_output "the left-out run is counted" "not compared: 1 run that did not match the filters"
expect_status 2 "compare: a filter that keeps one run" -- "$CCL_HARNESS" compare "$results" --card 'other-*'
expect_output "says the filters left them out" "got 1"
expect_output "and how many they dropped" "3 runs did not match the filters"
expect_status 2 "a time that is not one" -- "$CCL_HARNESS" compare "$results" --since yesterday
expect_output "names the option and the forms" "--since yesterday: not a time"
expect_status 2 "status: an unknown state" -- "$CCL_HARNESS" status "$results" --state finished
expect_output "lists the states" "--state finished: no run has this state; one of: rendered"
expect_status 2 "status: --until before --since" -- "$CCL_HARNESS" status "$results" --since 2026-01-02 --until 2026-01-01

finish
