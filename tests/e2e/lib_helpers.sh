#!/bin/bash
# The suites' own helpers (lib.sh): a helper that passes what it should fail would hide every
# regression behind it, so each is tried on a match and on a mismatch.
source "$(dirname "$0")/lib.sh"

# outcome HELPER ARGS...: "checks failures" after running one helper in a fresh count.
outcome() {
    (
        checks=0 failures=0
        "$@" 2>"$SCRATCH/helper.err"
        echo "$checks $failures"
    )
}

printf '{"state": "completed", "ranks": [{"exit_code": 0}, {"exit_code": 3}], "ok": true, "empty": ""}\n' >"$SCRATCH/doc.json"
printf 'not json\n' >"$SCRATCH/bad.json"

[ "$(outcome expect_eq "same" "a b" "a b")" = "1 0" ] && pass || fail "expect_eq fails equal strings"
[ "$(outcome expect_eq "differ" "a" "b")" = "1 1" ] && pass || fail "expect_eq passes different strings"
grep -qF "differ: got [b], wanted [a]" "$SCRATCH/helper.err" && pass || fail "expect_eq message: $(cat "$SCRATCH/helper.err")"
[ "$(outcome expect_eq "prefix" "a" "ab")" = "1 1" ] && pass || fail "expect_eq passes a prefix"

[ "$(outcome expect_json "$SCRATCH/doc.json" 'j["state"]' completed)" = "1 0" ] && pass || fail "expect_json: a string"
[ "$(outcome expect_json "$SCRATCH/doc.json" '[r["exit_code"] for r in j["ranks"]]' "[0, 3]")" = "1 0" ] && pass ||
    fail "expect_json: a list"
[ "$(outcome expect_json "$SCRATCH/doc.json" 'j["ok"]' True)" = "1 0" ] && pass || fail "expect_json: a boolean"
[ "$(outcome expect_json "$SCRATCH/doc.json" 'j["empty"]' "")" = "1 0" ] && pass || fail "expect_json: an empty string"
[ "$(outcome expect_json "$SCRATCH/doc.json" 'j["state"]' failed "the state")" = "1 1" ] && pass ||
    fail "expect_json passes a wrong value"
grep -qF "the state: got [completed], wanted [failed]" "$SCRATCH/helper.err" && pass ||
    fail "expect_json message: $(cat "$SCRATCH/helper.err")"
[ "$(outcome expect_json "$SCRATCH/doc.json" 'j["missing"]' "")" = "1 1" ] && pass || fail "expect_json passes a missing key"
[ "$(outcome expect_json "$SCRATCH/bad.json" 'j' "")" = "1 1" ] && pass || fail "expect_json passes a file that is not JSON"
[ "$(outcome expect_json "$SCRATCH/absent.json" 'j' "")" = "1 1" ] && pass || fail "expect_json passes an absent file"

finish
