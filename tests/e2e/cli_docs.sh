#!/bin/bash
# Shell completions and the man page: generated from the command table by the build, identical to
# what the binary prints, loadable by each shell, and offering every command and option --help
# lists. The command list comes from `ccl-harness --help`, never from a list kept here.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
build="${CCL_BUILD_DIR:-$(dirname "$CCL_HARNESS")}"
export HOME="$SCRATCH/home" XDG_CONFIG_HOME="$SCRATCH/home/.config" XDG_DATA_HOME="$SCRATCH/home/.local/share"
mkdir -p "$HOME"

for tool in zsh fish mandoc groff man; do
    command -v "$tool" >/dev/null || { echo "missing $tool: run .ci/setup" >&2; exit 1; }
done

# The visible commands, from the help's "Commands:" section.
mapfile -t commands < <("$CCL_HARNESS" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }')
[ "${#commands[@]}" -ge 10 ] && pass || fail "--help lists only ${#commands[@]} commands: ${commands[*]}"
for must in validate run help completion; do
    printf '%s\n' "${commands[@]}" | grep -qx "$must" && pass || fail "--help does not list $must"
done
printf '%s\n' "${commands[@]}" | grep -qx manpage && fail "the hidden manpage command is listed" || pass

# The long options a command's --help lists.
long_options() { "$CCL_HARNESS" "$1" --help | grep -E '^  +-' | grep -oE -- '--[a-z][a-z-]*' | sort -u; }

# ---- the build's files are what the binary prints now ----
declare -A generated=(
    [completions/ccl-harness.bash]="completion bash"
    [completions/_ccl-harness]="completion zsh"
    [completions/ccl-harness.fish]="completion fish"
    [man/ccl-harness.1]="manpage --date $(sed -n 's/^\.TH [^ ]* 1 "\([0-9-]*\)".*/\1/p' "$build/man/ccl-harness.1" 2>/dev/null)"
)
for file in "${!generated[@]}"; do
    # shellcheck disable=SC2086 # the arguments are words
    "$CCL_HARNESS" ${generated[$file]} >"$SCRATCH/now" || fail "ccl-harness ${generated[$file]} failed"
    if [ -s "$SCRATCH/now" ] && cmp -s "$SCRATCH/now" "$build/$file"; then pass; else fail "$build/$file differs from 'ccl-harness ${generated[$file]}' (or is missing)"; fi
done
bash_file="$build/completions/ccl-harness.bash"
zsh_file="$build/completions/_ccl-harness"
fish_file="$build/completions/ccl-harness.fish"
man_file="$build/man/ccl-harness.1"

expect_status 2 "completion for an unknown shell" -- "$CCL_HARNESS" completion tcsh
expect_output "unknown shell message" "ccl-harness: error: completion: "
expect_status 2 "completion without a shell" -- "$CCL_HARNESS" completion
expect_output "missing shell message" "shell is required"

# ---- bash: drive the completion function as bash's programmable completion would ----
complete_bash() { # complete_bash WORD...: the candidates for the last word, one a line
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _ccl_harness; printf "%s\n" "${COMPREPLY[@]}"' \
        _ "$bash_file" "$@"
}
expect_bash() { # expect_bash EXPECTED WORD...: the candidates, space-joined, are EXPECTED
    local want=$1 got
    shift
    got=$(complete_bash "$@" | sort | paste -sd ' ')
    if [ "$got" = "$want" ]; then pass; else fail "bash completion of [$*]: got [$got], wanted [$want]"; fi
}
bash -n "$bash_file" && pass || fail "bash -n $bash_file"
expect_bash "validate" ccl-harness va
expect_bash "--dry-run" ccl-harness run --dr
expect_bash "--dry-run" ccl-harness -v run --dr
expect_bash "--dry-run" ccl-harness --home /somewhere run --dr
expect_bash "--verbose --version" ccl-harness --ver
expect_bash "--verbose" ccl-harness validate --verb
expect_bash "bash fish zsh" ccl-harness completion ""
expect_bash "render reproduce results" ccl-harness help re
expect_bash "" ccl-harness run --grace ""
touch "$SCRATCH/card-one.yaml"
expect_bash "$SCRATCH/card-one.yaml" ccl-harness validate "$SCRATCH/card-o"
expect_bash "$SCRATCH/card-one.yaml" ccl-harness render --out "$SCRATCH/card-o"
# --cluster asks the binary being completed for the names; a failing one offers nothing.
clusters=$("$CCL_HARNESS" list clusters --names | grep '^slurm' | paste -sd ' ')
[ -n "$clusters" ] && pass || fail "list clusters --names has no slurm-* profile"
expect_bash "$clusters" "$CCL_HARNESS" run --cluster slurm
expect_bash "" /bin/false run --cluster slurm
all=$(complete_bash ccl-harness "")
for command in "${commands[@]}"; do
    grep -qx -- "$command" <<<"$all" && pass || fail "bash completion does not offer $command"
    for option in $(long_options "$command"); do
        got=$(complete_bash ccl-harness "$command" "$option")
        grep -qx -- "$option" <<<"$got" && pass || fail "bash completion of '$command $option' lacks it: [$got]"
    done
done

# ---- zsh: parses, and registers itself when sourced after compinit ----
zsh -n "$zsh_file" && pass || fail "zsh -n $zsh_file"
got=$(zsh -f -c 'autoload -U compinit && compinit -u -d "$1/zcompdump" && source "$2" && print -r -- $_comps[ccl-harness]' \
    _ "$SCRATCH" "$zsh_file" 2>&1)
[ "$got" = "_ccl-harness" ] && pass || fail "zsh: sourcing does not register _ccl-harness: [$got]"

# ---- fish: parses, and `complete -C` answers from it ----
fish -n "$fish_file" && pass || fail "fish -n $fish_file"
complete_fish() { fish --no-config -c 'source $argv[1]; complete -C $argv[2]' "$fish_file" "$1" | cut -f1; }
got=$(complete_fish 'ccl-harness va')
[ "$got" = "validate" ] && pass || fail "fish: 'ccl-harness va' gave [$got]"
got=$(complete_fish 'ccl-harness run --dr')
[ "$got" = "--dry-run" ] && pass || fail "fish: 'ccl-harness run --dr' gave [$got]"
got=$(complete_fish 'ccl-harness completion ' | sort | paste -sd ' ')
[ "$got" = "bash fish zsh" ] && pass || fail "fish: 'ccl-harness completion ' gave [$got]"
all=$(complete_fish 'ccl-harness ')
for command in "${commands[@]}"; do
    grep -qx -- "$command" <<<"$all" && pass || fail "fish completion does not offer $command"
    grep -qF -- "__ccl_harness_using $command'" "$fish_file" || [ -z "$(long_options "$command")" ] && pass ||
        fail "fish completion has no options for $command"
done
grep -qF -- "-l dry-run" "$fish_file" && pass || fail "fish completion lacks --dry-run"

# ---- the man page: clean roff, every command rendered ----
got=$(mandoc -T lint -W warning "$man_file" 2>&1) && [ -z "$got" ] && pass || fail "mandoc -T lint: $got"
got=$(groff -man -ww -z "$man_file" 2>&1) && [ -z "$got" ] && pass || fail "groff -man -ww: $got"
rendered=$(MANWIDTH=100 man -P cat -l "$man_file" 2>&1 | col -b)
for section in NAME SYNOPSIS DESCRIPTION COMMANDS "GLOBAL OPTIONS" "EXIT STATUS" ENVIRONMENT FILES "SEE ALSO"; do
    grep -qx "$section" <<<"$rendered" && pass || fail "man page lacks the $section section"
done
for variable in CCL_HARNESS_HOME XDG_CONFIG_HOME XDG_CACHE_HOME NO_COLOR TMPDIR; do
    grep -qE "^ *$variable( |\$)" <<<"$rendered" && pass || fail "man page ENVIRONMENT lacks $variable"
done
for command in "${commands[@]}"; do
    grep -qE "^ +ccl-harness $command( |\$)" <<<"$rendered" && pass || fail "man page has no heading for $command"
    for option in $(long_options "$command"); do
        grep -qF -- "$option" <<<"$rendered" && pass || fail "man page lacks $command's $option"
    done
done
grep -qF -- "--no-pack{" <<<"$rendered" && fail "man page shows --no-pack{false}" || pass
grep -q "^ *ccl-harness manpage" <<<"$rendered" && fail "man page lists the hidden manpage command" || pass

finish
