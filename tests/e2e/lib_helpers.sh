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

# require_root_netns: exits 125 (CTest's skip) with the suite's name and why, else returns.
skip_of() { # skip_of SETUP: "STATUS MESSAGE" of require_root_netns after SETUP, in a subshell
    local rc=0
    (
        eval "$1"
        require_root_netns probe_suite 2>"$SCRATCH/skip.err"
        exit 0
    ) || rc=$?
    echo "$rc $(cat "$SCRATCH/skip.err")"
}
expect_eq "not root: skipped" "125 probe_suite: skipped: needs root" "$(skip_of 'id() { echo 1000; }')"
expect_eq "no network namespaces: skipped" "125 probe_suite: skipped: cannot create network namespaces" \
    "$(skip_of 'id() { echo 0; }; ip() { return 1; }')"
expect_eq "root with namespaces: goes on" "0 " "$(skip_of 'id() { echo 0; }; ip() { return 0; }')"

finish
