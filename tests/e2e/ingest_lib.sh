#!/bin/bash
# What the ingest suites (ingest.sh, ingest_partial.sh) share, sourced after lib.sh; both set
# $results (ingest's --results) and $before (its entry count before a refused case).

# bundle_of: the bundle the last ingest printed (bundle: PATH.tar.zst).
bundle_of() { sed -n 's/^bundle: \(.*\.tar\.zst\)$/\1/p' <<<"$OUT" | tail -n 1; }
# entries: how many files and directories $results holds.
entries() { find "${results:?set by the suite}" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
# bad_case WHAT NEEDLE -- ARGS...: ingest ARGS is refused (exit 2) saying NEEDLE, and leaves
# nothing under $results.
bad_case() {
    local what=$1 needle=$2
    shift 3
    expect_status 2 "$what" -- "$CCL_HARNESS" ingest "$@" --results "$results"
    expect_output "$what: says" "$needle"
    expect_eq "$what: nothing left under results/" "${before:?set by the suite}" "$(entries)"
}
