#!/bin/bash
# Cards that leave the harness are read by the CCL-Bench tools with PyYAML (yaml.safe_load, YAML
# 1.1): `validate` warns and `verify` fails where PyYAML cannot load a card, or reads a field as
# another value than the harness does. Real PyYAML (/usr/bin/python3, python3-yaml) is the judge.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
PY=/usr/bin/python3
fixture="$CCL_SOURCE_DIR/tests/e2e/fixtures/bundle_fixture.py"
unloadable="PyYAML cannot load this card"

if ! "$PY" -c 'import yaml' 2>/dev/null; then
    echo "PyYAML (python3-yaml) is not installed: it is the reference this suite checks against" >&2
    exit 1
fi

# pyyaml_verdicts FILE...: one line per file, "<file>\t<loads|fails>", as yaml.safe_load sees it.
pyyaml_verdicts() {
    "$PY" - "$@" <<'PY'
import sys, yaml
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as f:
            yaml.safe_load(f)
        print(path + "\tloads")
    except Exception:
        print(path + "\tfails")
PY
}

# harness_verdicts JSON: "<file>\t<loads|fails|breaks>" from `validate --json`: fails when yaml-cpp
# cannot read the file or a message says PyYAML cannot load it; breaks when PyYAML sees a line
# break the harness does not (PyYAML may then fail or read something else).
harness_verdicts() {
    "$PY" - "$1" "$unloadable" <<'PY'
import json, sys
for entry in json.load(open(sys.argv[1])):
    messages = [d["message"] for d in entry["errors"] + entry["warnings"]]
    if any(m.startswith("invalid YAML") or m.startswith(sys.argv[2]) for m in messages):
        verdict = "fails"
    elif any(m.startswith("PyYAML reads a line break") for m in messages):
        verdict = "breaks"
    else:
        verdict = "loads"
    print(entry["file"] + "\t" + verdict)
PY
}

# 1. Every card of the CCL-Bench corpus: what PyYAML loads, validate never calls unloadable, and
# what PyYAML refuses, validate does not pass as loadable.
mapfile -d '' cards < <(find "$CORPUS" \( -name '*.yaml' -o -name '*.yml' \) -type f -print0 | sort -z)
if [ "${#cards[@]}" -lt 100 ]; then
    fail "the corpus at $CORPUS has ${#cards[@]} cards; expected the CCL-Bench corpus (over 100)"
fi
"$CCL_HARNESS" validate --json "${cards[@]}" >"$SCRATCH/corpus.json" 2>"$SCRATCH/corpus.err" || true
pyyaml_verdicts "${cards[@]}" | sort >"$SCRATCH/pyyaml.tsv"
harness_verdicts "$SCRATCH/corpus.json" | sort >"$SCRATCH/harness.tsv"
expect_eq "every corpus card judged by both" "${#cards[@]}" "$(wc -l <"$SCRATCH/harness.tsv")"
if diff_out=$(diff "$SCRATCH/pyyaml.tsv" "$SCRATCH/harness.tsv"); then pass; else fail "corpus: PyYAML's verdicts (<) against validate's (>):"$'\n'"$diff_out"; fi

# 2. One card per hostile value in a string field (contributor): validate warns exactly where
# PyYAML reads something other than the text, and names the line and field.
values=(yes Yes NO on OFF y n true False 1.10 1.5 1.0e3 1.0e+3 1e3 017 09 0o17 0x1F 0b101 1_000 1:20 1:20.5 1:60
    2024-01-02 2024-13-02 2024-1-2 '2024-01-02 10:00:00' .inf -.Inf .nan +.nan '=' nULL 8 -0 +12 plain-name 'a b')
hostile="$SCRATCH/hostile"
mkdir -p "$hostile"
files=()
for i in "${!values[@]}"; do
    sed "s/^contributor: .*/contributor: ${values[$i]}/" workloads/tiny-ddp/tiny-ddp.yaml >"$hostile/v$i.yaml"
    files+=("$hostile/v$i.yaml")
done
"$CCL_HARNESS" validate --json "${files[@]}" >"$SCRATCH/hostile.json" 2>/dev/null || true
line=$(grep -n '^contributor:' workloads/tiny-ddp/tiny-ddp.yaml | cut -d: -f1)
if report=$("$PY" - "$SCRATCH/hostile.json" "$line" "$unloadable" "${files[@]}" <<'PY'
import datetime, json, sys, yaml
results = {entry["file"]: entry for entry in json.load(open(sys.argv[1]))}
line, unloadable, wrong = sys.argv[2], sys.argv[3], []
for path in sys.argv[4:]:
    text = open(path).read()
    written = [l for l in text.splitlines() if l.startswith("contributor: ")][0][len("contributor: "):]
    try:
        value = yaml.safe_load(text)["contributor"]
        same = isinstance(value, str) or value is None or (not isinstance(value, bool) and str(value) == written)
        expect = "differs" if not same else "date" if isinstance(value, datetime.date) else "loads"
    except Exception:
        expect = "fails"
    about = [d for d in results[path]["errors"] + results[path]["warnings"]
             if d["field"] == "contributor" and d["message"].startswith(("PyYAML", unloadable))]
    got = ("loads" if not about else "fails" if about[0]["message"].startswith(unloadable)
           else "date" if "as a date, not as text" in about[0]["message"] else "differs")
    if got != expect or any(not d["location"].endswith(":%s:14" % line) for d in about):
        wrong.append("%s: PyYAML %s, validate %s %s" % (written, expect, got, about))
print("\n".join(wrong))
sys.exit(1 if wrong else 0)
PY
); then pass; else fail "validate against PyYAML, value by value:"$'\n'"$report"; fi
# The warning a contributor reads, and --strict turning the ones that lose meaning into errors.
expect_status 0 "validate warns about contributor: yes" -- "$CCL_HARNESS" validate "$hostile/v0.yaml"
expect_output "names line, field and fix" "$hostile/v0.yaml:$line:14: contributor: PyYAML reads True (a boolean), not the text \"yes\" the harness reads; quote it: \"yes\""
expect_status 2 "validate --strict refuses it" -- "$CCL_HARNESS" validate --strict "$hostile/v0.yaml"
expect_output "as an error" "error: $hostile/v0.yaml:$line:14: contributor: PyYAML reads True"

# 3. A bundle card edited by hand: verify fails at the line and field, and passes the quoted form.
results="$CCL_TEST_TMP/pyyaml-cards-results"
rm -rf "$results"
expect_status 0 "tiny-ddp runs" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
assemble_latest_run "$SCRATCH/bundles"
expect_status 0 "the bundle as assembled is valid" -- "$CCL_HARNESS" verify "$bundle"

# edit_card CASE FIELD VALUE: a copy of the bundle whose card has FIELD (contributor, or
# framework_version for Model-executor.framework.version) set to VALUE byte for byte, its
# manifest rewritten; $copy is the copy, $card_line the line the value is on.
edit_card() {
    rm -rf "${SCRATCH:?}/$1"
    mkdir -p "$SCRATCH/$1"
    cp -r "$bundle" "$SCRATCH/$1/"
    copy="$SCRATCH/$1/$name"
    card_line=$("$PY" - "$copy/$name.yaml" "$2" "$3" <<'PY'
import re, sys
path, field, value = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(path, newline="").read()
if field == "contributor":
    text, count = re.subn(r"(?m)^contributor:.*$", lambda m: "contributor: " + value, text)
else:
    text, count = re.subn(r"(?m)^(\s+)name: torch-ddp$", lambda m: m.group(0) + "\n" + m.group(1) + "version: " + value, text)
assert count == 1, "no line to edit"
open(path, "w", newline="").write(text)
lines = text.split("\n")
if field == "contributor":
    print([i + 1 for i, line in enumerate(lines) if line.startswith("contributor: ")][0])
else:
    print([i + 2 for i, line in enumerate(lines) if line.strip() == "name: torch-ddp"][0])
PY
)
    "$PY" "$fixture" manifest "$copy"
}

edit_card eq contributor '='
expect_status 1 "verify: contributor: =" -- "$CCL_HARNESS" verify "$copy"
expect_output "contributor: = named" "$name.yaml:$card_line:14: contributor: $unloadable: a plain = is the value tag"
edit_card cr contributor $'foo\rbar'
expect_status 1 "verify: a raw CR in contributor" -- "$CCL_HARNESS" verify "$copy"
expect_output "raw CR named" "$name.yaml:$card_line:17: contributor: PyYAML reads a line break here (a carriage return)"
edit_card yes contributor yes
expect_status 1 "verify: contributor: yes" -- "$CCL_HARNESS" verify "$copy"
expect_output "contributor: yes named" "$name.yaml:$card_line:14: contributor: PyYAML reads True (a boolean), not the text \"yes\""
edit_card version framework_version 1.10
expect_status 1 "verify: version: 1.10" -- "$CCL_HARNESS" verify "$copy"
expect_output "version: 1.10 named" "$name.yaml:$card_line:14: Model-executor.framework.version: PyYAML reads 1.1 (a float), not the text \"1.10\""
expect_output "the fix" 'quote it: "1.10"'
# The same values quoted: PyYAML and the harness read the same text, and verify passes.
for quoted in '"="' '"foo\rbar"' '"yes"'; do
    edit_card quoted contributor "$quoted"
    expect_status 0 "verify: contributor: $quoted" -- "$CCL_HARNESS" verify "$copy"
done
edit_card quoted_version framework_version '"1.10"'
expect_status 0 "verify: version: \"1.10\"" -- "$CCL_HARNESS" verify "$copy"
# A date where text belongs loses nothing but its type: a warning, and the bundle stays valid.
edit_card date contributor 2024-01-02
expect_status 0 "verify: contributor: 2024-01-02 (a warning)" -- "$CCL_HARNESS" verify "$copy"
expect_output "date warned" "contributor: PyYAML reads 2024-01-02 as a date"

finish
