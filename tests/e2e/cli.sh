#!/bin/bash
# Bad input through the command line: one clear error, exit 2, nothing half-written.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
tiny=workloads/tiny-ddp/tiny-ddp.yaml
work="$SCRATCH/cards"
mkdir -p "$work"
cp workloads/tiny-ddp/* "$work/"

edit() { # edit NAME SED-EXPRESSION: a copy of the tiny card with one change
    sed "$2" "$tiny" >"$work/$1.yaml"
    echo "$work/$1.yaml"
}

expect_status 0 "--help" -- "$CCL_HARNESS" --help
expect_output "--help lists render" "render"
expect_status 0 "render --help" -- "$CCL_HARNESS" render --help
expect_output "render --help teaches --set" "--set"
expect_status 2 "unknown subcommand" -- "$CCL_HARNESS" frobnicate
expect_status 2 "unknown flag" -- "$CCL_HARNESS" validate --frob "$tiny"

# Bare ccl-harness: the full help on stdout, exit 0; `help` and `help CMD` are --help.
stdout_of() { "$@" 2>/dev/null || true; }
bare=$(stdout_of "$CCL_HARNESS")
expect_status 0 "no subcommand prints help" -- "$CCL_HARNESS"
for needle in "Commands:" "validate " "check workload cards" "Global options:" "-v,--verbose" "-q,--quiet" "--home DIR" \
    "--version" "Start here" "ccl-harness run workloads/tiny-ddp/tiny-ddp.yaml"; do
    grep -qF -- "$needle" <<<"$bare" && pass || fail "bare ccl-harness: stdout lacks [$needle]"
done
[ "$bare" = "$(stdout_of "$CCL_HARNESS" --help)" ] && pass || fail "bare ccl-harness differs from --help"
[ "$bare" = "$(stdout_of "$CCL_HARNESS" help)" ] && pass || fail "help differs from --help"
[ "$(stdout_of "$CCL_HARNESS" help render)" = "$(stdout_of "$CCL_HARNESS" render --help)" ] && pass ||
    fail "help render differs from render --help"
expect_status 0 "help render" -- "$CCL_HARNESS" help render
expect_output "help render shows its options" "--dry-run"
expect_status 2 "help for an unknown command" -- "$CCL_HARNESS" help rendr
expect_output "help did you mean" 'ccl-harness: error: unknown command "rendr"; did you mean "render"?'
grep -qF manpage <<<"$bare" && fail "the hidden manpage command is in the help" || pass
expect_status 0 "--version" -- "$CCL_HARNESS" --version
expect_output "--version prints the version" "0.1.0"

# Usage errors: `ccl-harness: error: ...`, a pointer to --help, exit 2; never CLI11's own words.
expect_status 2 "misspelt command" -- "$CCL_HARNESS" valdate x
[ "$OUT" = 'ccl-harness: error: unknown command "valdate"; did you mean "validate"?'$'\n'"run 'ccl-harness --help' for the list of commands" ] &&
    pass || fail "misspelt command message: [$OUT]"
expect_output "no suggestion for a word far from every command" 'ccl-harness: error: unknown command "frobnicate"'$'\n'
expect_status 2 "misspelt option" -- "$CCL_HARNESS" run "$tiny" --dryrun
[ "$OUT" = 'ccl-harness: error: run: unknown option "--dryrun"; did you mean "--dry-run"?'$'\n'"run 'ccl-harness run --help' for its options" ] &&
    pass || fail "misspelt option message: [$OUT]"
expect_status 2 "misspelt option with a value" -- "$CCL_HARNESS" render "$tiny" --clustr=slurm-local
expect_output "option=value suggestion" 'render: unknown option "--clustr"; did you mean "--cluster"?'
expect_status 2 "misspelt global option" -- "$CCL_HARNESS" --verbse validate "$tiny"
expect_output "global option suggestion" 'unknown option "--verbse"; did you mean "--verbose"?'
expect_status 2 "missing positional" -- "$CCL_HARNESS" validate
expect_output "missing positional message" "ccl-harness: error: validate: files is required"
expect_output "missing positional hint" "run 'ccl-harness validate --help' for its options"
expect_status 2 "one argument too many" -- "$CCL_HARNESS" pack "$SCRATCH" "$SCRATCH/extra"
expect_output "extra argument message" "ccl-harness: error: pack: unexpected argument \"$SCRATCH/extra\""
expect_status 2 "not a number" -- "$CCL_HARNESS" metrics --threads many "$SCRATCH"
expect_output "conversion message" "ccl-harness: error: metrics: "
expect_status 2 "option without its value" -- "$CCL_HARNESS" render "$tiny" --out
expect_output "missing value message" "ccl-harness: error: render: "
for args in "" "valdate" "run $tiny --dryrun" "validate" "pack a b" "metrics --threads many x" "render $tiny --out"; do
    # shellcheck disable=SC2086 # the arguments are words
    got=$("$CCL_HARNESS" $args 2>&1 >/dev/null || true)
    if grep -qE "A subcommand is required|The following argument|Run with --help" <<<"$got"; then fail "raw CLI11 text for [$args]: $got"; else pass; fi
done

# Global options before or after the command.
expect_status 2 "-v and -q together" -- "$CCL_HARNESS" -v -q validate "$tiny"
expect_output "-v -q message" "ccl-harness: error: -v/--verbose and -q/--quiet cannot be used together"
expect_status 2 "-v, and the command's own -q" -- "$CCL_HARNESS" -v validate -q "$tiny"
expect_status 0 "-v before the command" -- "$CCL_HARNESS" -v validate "$tiny"
expect_output "-v tells where the home is" "harness home $CCL_SOURCE_DIR"
expect_status 0 "-v after the command" -- "$CCL_HARNESS" validate "$tiny" --verbose
expect_output "-v after the command tells where the home is" "harness home"
verbose_stdout=$(stdout_of "$CCL_HARNESS" validate -v "$tiny")
grep -q "harness home" <<<"$verbose_stdout" && fail "-v printed on stdout" || pass
mkdir -p "$SCRATCH/home-copy" && cp -r templates clusters containers "$SCRATCH/home-copy/"
expect_status 0 "--home before the command" -- "$CCL_HARNESS" --home "$SCRATCH/home-copy" -v validate --strict "$tiny"
expect_output "--home is used" "harness home $SCRATCH/home-copy"
expect_status 0 "--home after the command" -- "$CCL_HARNESS" validate --strict "$tiny" --home "$SCRATCH/home-copy" -v
expect_output "--home after the command is used" "harness home $SCRATCH/home-copy"
expect_status 2 "--home without templates" -- "$CCL_HARNESS" --home "$SCRATCH/precious-not" render "$tiny" --out "$SCRATCH/never-home"
expect_output "--home error" "no templates/ there"
[ ! -e "$SCRATCH/never-home" ] && pass || fail "render wrote output with a bad --home"
expect_status 2 "--home without its value" -- "$CCL_HARNESS" validate "$tiny" --home

expect_status 0 "valid card" -- "$CCL_HARNESS" validate --strict "$tiny"
expect_status 2 "missing file" -- "$CCL_HARNESS" validate "$work/nope.yaml"
expect_output "missing file named" "nope.yaml: cannot read"
expect_status 2 "directory as card" -- "$CCL_HARNESS" validate "$work"

printf 'version: 1\nworkload:\n  model: [unclosed\n' >"$work/broken.yaml"
expect_status 2 "broken YAML" -- "$CCL_HARNESS" validate "$work/broken.yaml"
expect_output "broken YAML position" "broken.yaml:4:1: invalid YAML"

card=$(edit wrong-type 's/^    tp: 1$/    tp: four/')
expect_status 2 "wrong type" -- "$CCL_HARNESS" validate "$card"
expect_output "wrong type message" "wrong-type.yaml:55:9: Model-executor.model_plan_parallelization.tp: expected a positive integer, got \"four\""

card=$(edit unknown-key 's/^    dp_shard: 1$/    dp_shrad: 1/')
expect_status 2 "unknown key next to a missing required one" -- "$CCL_HARNESS" validate "$card"
expect_output "did you mean" "did you mean \"dp_shard\"?"

# The harness's own launch: section refuses a typo (the job would go out with a default the user
# did not choose); CCL-Bench's sections warn, as upstream's loader tolerates them.
card=$(edit launch-typo 's/^  steps: 12$/  steps: 12\n  stepz: 3/')
expect_status 2 "an unknown key in launch: is an error" -- "$CCL_HARNESS" validate "$card"
expect_output "with its line and a suggestion" "launch-typo.yaml:$(grep -n '^  stepz: 3$' "$card" | cut -d: -f1):3: launch.stepz: unknown key in the harness's launch: section; did you mean \"steps\"?"
card=$(edit extra-key 's/^    batch_size: \(.*\)$/    batch_size: \1\n    batch_sise: 3/')
expect_status 0 "unknown key alone only warns" -- "$CCL_HARNESS" validate "$card"
expect_output "unknown key warning" "workload.data.batch_sise: unknown key, ignored; did you mean \"batch_size\"?"
for quiet in "-q validate" "--quiet validate" "validate -q" "validate --quiet"; do
    # shellcheck disable=SC2086 # the arguments are words
    expect_status 0 "$quiet: warnings only" -- "$CCL_HARNESS" $quiet "$card"
    grep -qF "unknown key" <<<"$OUT" && fail "$quiet still printed the warning: $OUT" || pass
done

card=$(edit inconsistent 's/^    dp_replicate: 2$/    dp_replicate: 4/')
expect_status 0 "inconsistent parallelism passes the archive level" -- "$CCL_HARNESS" validate "$card"
expect_status 2 "inconsistent parallelism fails --strict" -- "$CCL_HARNESS" validate --strict "$card"
expect_output "parallelism message" "tp·pp·cp·dp_replicate·dp_shard = 1·1·1·4·1 = 4, but total_count is 2"
expect_status 2 "render --strict refuses it too" -- "$CCL_HARNESS" render --strict "$card" --out "$SCRATCH/never"
[ ! -e "$SCRATCH/never" ] && pass || fail "render --strict wrote output for an invalid card"

card=$(edit hostile-env 's/^      GLOO_SOCKET_IFNAME: lo$/      "BAD KEY": x/')
expect_status 2 "env key that is not an identifier" -- "$CCL_HARNESS" validate "$card"
expect_output "env key message" "expected an environment variable name"

card=$(edit unknown-framework 's/^    name: torch-ddp$/    name: deepspeed/')
expect_status 2 "unknown framework" -- "$CCL_HARNESS" render "$card" --out "$SCRATCH/uf"
expect_output "no template line" "no template for framework \"deepspeed\" on target \"local\"; templates exist for:"

expect_status 2 "unknown cluster" -- "$CCL_HARNESS" render "$tiny" --cluster perlmuter --out "$SCRATCH/uc"
expect_output "cluster suggestion" "unknown cluster \"perlmuter\" (did you mean \"perlmutter\"?)"

expect_status 2 "bad --set" -- "$CCL_HARNESS" render "$tiny" --set nonsense --out "$SCRATCH/bs"
expect_output "bad --set message" "expected PATH=VALUE"
expect_status 2 "--set with a wrong type" -- "$CCL_HARNESS" validate --set launch.steps=many "$tiny"
expect_output "--set location" "--set launch.steps=many: launch.steps: expected a positive integer, got \"many\""

# --out: unwritable, a file, a directory that is not an earlier render.
touch "$SCRATCH/a-file"
expect_status 2 "--out under a file" -- "$CCL_HARNESS" render "$tiny" --out "$SCRATCH/a-file/out"
expect_status 2 "--out is a file" -- "$CCL_HARNESS" render "$tiny" --out "$SCRATCH/a-file"
mkdir -p "$SCRATCH/precious" && echo keep >"$SCRATCH/precious/notes.txt"
expect_status 2 "--out holds other files" -- "$CCL_HARNESS" render "$tiny" --out "$SCRATCH/precious"
[ "$(cat "$SCRATCH/precious/notes.txt")" = keep ] && pass || fail "render touched a foreign directory"
if [ "$(id -u)" -ne 0 ]; then
    mkdir -p "$SCRATCH/locked" && chmod 0500 "$SCRATCH/locked"
    expect_status 2 "--out in an unwritable directory" -- "$CCL_HARNESS" render "$tiny" --out "$SCRATCH/locked/out"
    chmod 0700 "$SCRATCH/locked"
fi

# A re-render replaces the previous one whole: no stale files survive.
"$CCL_HARNESS" render -q "$tiny" --out "$SCRATCH/rr" >/dev/null
touch "$SCRATCH/rr/stale"
expect_status 0 "re-render" -- "$CCL_HARNESS" render -q "$tiny" --out "$SCRATCH/rr"
[ ! -e "$SCRATCH/rr/stale" ] && pass || fail "stale file survived a re-render"
expect_status 0 "--dry-run" -- "$CCL_HARNESS" render "$tiny" --dry-run --out "$SCRATCH/dry"
[ ! -e "$SCRATCH/dry" ] && pass || fail "--dry-run wrote files"

expect_status 0 "--json" -- "$CCL_HARNESS" validate --json "$tiny"
if /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); assert d[0]["status"] in ("ok","warning")' <<<"$OUT"; then pass; else fail "--json output: $OUT"; fi
expect_status 0 "profiles validate" -- "$CCL_HARNESS" validate --profile clusters/*.yaml

# Help text: no CLI11 defaults such as --no-pack{false} in any command's --help.
mapfile -t commands < <("$CCL_HARNESS" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }')
[ "${#commands[@]}" -ge 10 ] && pass || fail "--help lists only ${#commands[@]} commands"
for command in "${commands[@]}"; do
    expect_status 0 "$command --help" -- "$CCL_HARNESS" "$command" --help
    grep -qE -- '-[a-z-]+\{(true|false)\}' <<<"$OUT" && fail "$command --help shows a flag default: $OUT" || pass
    expect_output "$command --help names the global options" "Global options, before or after the command"
done
expect_status 0 "run --help" -- "$CCL_HARNESS" run --help
expect_output "run --help shows --no-pack" "  --no-pack "

finish
