#!/bin/bash
# CTest runs each unit case as `unit_tests "<case name>"` (catch_discover_tests). A name that starts
# with "-" ("--zip pairs the i-th values") would be read as an option, so it is passed escaped,
# "\--zip ...", which Catch's test-spec parser reads back as the name. Discovery's own calls
# (--list-test-names-only, --list-reporters) pass through unchanged.
exe=$1
shift
if [ $# -gt 0 ] && [[ $1 == -* ]] && [[ $1 != --list-* ]]; then
    set -- "\\$1" "${@:2}"
fi
exec "$exe" "$@"
