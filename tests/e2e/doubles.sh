#!/bin/bash
# The doubles themselves, driven directly: each must accept what the real tool accepts and refuse
# what it refuses, or the framework and container suites built on them prove nothing. Shifter's
# option parsing is compared with glibc's getopt_long over shifter's own option table; the
# argparse doubles take a unique prefix of an option where the contract's allow_abbrev says the
# real parser does, refuse an ambiguous one, print help listing every contract option with exit 0
# (vLLM: the config groups, and every option under --help=all); vLLM's bench writes no JSON when
# it profiles. No Slurm, no image, no build beyond what lib.sh asks for.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
py=/usr/bin/python3
contracts=docs/contracts
sglang_contract=$(ls "$contracts"/sglang-*.yaml)

# contract_options FILE: every option name of a contract, one a line.
contract_options() {
    "$py" -c 'import sys, yaml; print("\n".join(o["name"] for o in yaml.safe_load(open(sys.argv[1]))["options"]))' "$1"
}

# 1. Shifter (tests/doubles/shifter/shifter, NERSC/shifter src/shifter.c at 84b7d349).
export CCL_SHIFTER_GATEWAY="$SCRATCH/shifter-gateway.txt"
shifter=tests/doubles/shifter/shifter
image=docker:vllm/vllm-openai:v0.19.0
expect_status 0 "shifterimg pulls the image" -- tests/doubles/shifter/shifterimg pull "$image"
run_in() { "$shifter" --image="$image" "$@"; }

expect_status 0 "-i IMAGE" -- "$shifter" -i "$image" true
expect_status 0 "the image from SHIFTER_IMAGETYPE and SHIFTER_IMAGE" -- \
    env SHIFTER_IMAGETYPE=docker SHIFTER_IMAGE=vllm/vllm-openai:v0.19.0 "$shifter" true
expect_status 1 "no image at all" -- env -u SLURM_SPANK__SLURM_SPANK_OPTION_shifter_image "$shifter" true
expect_output "shifter's message" "No image specified, or specified incorrectly!"
expect_status 0 "--workdir=DIR" -- run_in --workdir="$SCRATCH" pwd
expect_eq "--workdir changes directory" "$SCRATCH" "$OUT"
expect_status 0 "-wDIR" -- run_in -w"$SCRATCH" pwd
expect_eq "-w changes directory" "$SCRATCH" "$OUT"
expect_status 0 "a missing --workdir stays in /" -- run_in --workdir="$SCRATCH/missing" pwd
expect_output "as shifter says" "Failed to switch to working dir: $SCRATCH/missing, staying in /"
expect_status 1 "a bare --workdir needs the image's, which the doubles' images lack" -- run_in --workdir pwd
expect_output "as shifter says" "No workdir specified on command line or in image definition."
# An optional value is only ever attached: `--workdir DIR` is a bare --workdir and a command DIR.
expect_status 1 "--workdir DIR is a bare --workdir" -- run_in --workdir "$SCRATCH" pwd
expect_status 0 "the host environment passes through" -- env CCL_FROM_HOST=yes "$shifter" --image="$image" printenv CCL_FROM_HOST
expect_eq "host variable" yes "$OUT"
expect_status 1 "--clearenv drops it" -- env CCL_FROM_HOST=yes "$shifter" --image="$image" --clearenv printenv CCL_FROM_HOST
expect_status 1 "-E drops it" -- env CCL_FROM_HOST=yes "$shifter" --image="$image" -E printenv CCL_FROM_HOST
expect_status 0 "--clearenv keeps the image's PATH" -- run_in --clearenv sh -c 'command -v vllm'
printf '# a comment\n\nCCL_A=from-file\nCCL_B=two words\n' >"$SCRATCH/env-file"
expect_status 0 "--env-file, --env, -e" -- run_in --env-file="$SCRATCH/env-file" --env CCL_C=c --env=CCL_D=d -e CCL_E=e \
    sh -c 'echo "$CCL_A|$CCL_B|$CCL_C|$CCL_D|$CCL_E|$SHIFTER_RUNTIME"'
expect_eq "the variables set" "from-file|two words|c|d|e|1" "$OUT"
expect_status 0 "--env over --env-file" -- run_in --env-file="$SCRATCH/env-file" -e CCL_A=flag printenv CCL_A
expect_eq "--env wins" flag "$OUT"
printf 'NOT_AN_ASSIGNMENT\n' >"$SCRATCH/bad-env-file"
expect_status 1 "an env-file line without =" -- run_in --env-file="$SCRATCH/bad-env-file" true
expect_output "as shifter says" "ERROR: Invalid env-file entry: NOT_AN_ASSIGNMENT"
expect_status 1 "--env NAME= (an empty value)" -- run_in --env CCL_X= true
expect_output "as shifter says" "Improperly formatted environment variable: CCL_X="
expect_status 0 "--entrypoint=COMMAND runs the arguments through it" -- run_in --entrypoint=/bin/echo one two
expect_eq "the entrypoint's output" "one two" "$OUT"
expect_status 0 "--entry=COMMAND, the table's other name" -- run_in --entry=/bin/echo three
expect_eq "--entry's output" three "$OUT"
expect_status 1 "a bare --entrypoint needs the image's" -- run_in --entrypoint /bin/echo one
expect_output "as shifter says" "Image does not have a defined entrypoint."
expect_status 0 "--verbose, -v, -n, --volume, -V, --module, -m" -- run_in --verbose -v -n --volume=/tmp:/tmp -V /tmp:/mnt \
    --module=none -m none true
expect_status 0 "-- ends the options" -- run_in -- /bin/echo --not-an-option
expect_eq "after --" "--not-an-option" "$OUT"
expect_status 0 "the first non-option ends them too" -- run_in /bin/echo --clearenv
expect_eq "POSIXLY_CORRECT" "--clearenv" "$OUT"
expect_status 0 "--help" -- "$shifter" --help --no-such-flag
expect_output "the usage" "[--entrypoint[=command]] [--workdir[=/path]]"
expect_status 0 "-h" -- "$shifter" -h
expect_status 1 "a made-up option" -- run_in --no-such-flag true
expect_output "getopt's message" "shifter: unrecognized option '--no-such-flag'"
expect_output "then shifter's" "Missing an argument!"
expect_status 1 "an option before --help fails first" -- "$shifter" --no-such-flag --help
expect_status 1 "a made-up short option" -- run_in -x true
expect_output "getopt's message" "shifter: invalid option -- 'x'"
expect_status 1 "a value for a flag" -- run_in --clearenv=yes true
expect_output "getopt's message" "shifter: option '--clearenv' doesn't allow an argument"
expect_status 1 "an ambiguous prefix" -- run_in --en true
expect_output "getopt's message" "shifter: option '--en' is ambiguous; possibilities: '--entry' '--env' '--env-file'"
expect_status 0 "a unique prefix" -- env CCL_FROM_HOST=yes "$shifter" --ima="$image" --clear sh -c 'echo "[$CCL_FROM_HOST]"'
expect_eq "--clear is --clearenv" "[]" "$OUT"

# The same command lines through glibc's getopt_long with shifter's table and option string
# (src/shifter.c:324-337, 352) must be accepted or refused alike, with the same message.
ref="$SCRATCH/getopt-ref"
cat >"$ref.c" <<'EOF'
#include <getopt.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    static struct option table[] = {
        {"help", 0, 0, 'h'}, {"volume", 1, 0, 'V'}, {"verbose", 0, 0, 'v'}, {"image", 1, 0, 'i'},
        {"entry", 2, 0, 0}, {"entrypoint", 2, 0, 0}, {"workdir", 2, 0, 'w'}, {"module", 1, 0, 'm'},
        {"env", 1, 0, 'e'}, {"env-file", 1, 0, 0}, {"clearenv", 0, 0, 'E'}, {0, 0, 0, 0}};
    setenv("POSIXLY_CORRECT", "1", 1);
    int opt, index;
    while ((opt = getopt_long(argc, argv, "hnvV:i:e:Ew::m:", table, &index)) != -1) {
        if (opt == '?') return 1;
    }
    return 0;
}
EOF
if cc -o "$ref" "$ref.c" 2>"$SCRATCH/cc.log"; then
    pass
    while IFS= read -r line; do
        read -ra args <<<"$line"
        want=0
        "$ref" "${args[@]}" true 2>"$SCRATCH/ref.err" >/dev/null || want=1
        got=0
        env SHIFTER_IMAGETYPE=docker SHIFTER_IMAGE=vllm/vllm-openai:v0.19.0 "$shifter" "${args[@]}" true \
            >/dev/null 2>"$SCRATCH/double.err" || got=1
        if [ $want = 1 ]; then
            message=$(sed 's/^[^:]*: //' "$SCRATCH/ref.err")
            { [ $got = 1 ] && grep -qxF "shifter: $message" "$SCRATCH/double.err"; } && pass ||
                fail "getopt_long refuses [$line] ($message); the double: exit $got, $(cat "$SCRATCH/double.err")"
        else
            ! grep -q "Missing an argument!" "$SCRATCH/double.err" && pass ||
                fail "getopt_long takes [$line]; the double refuses it: $(cat "$SCRATCH/double.err")"
        fi
    done <<'EOF'
--clearenv
--clear
--c
-E
-vEn
--verbose
--ver
--v
--vol=/a:/b
--volume /a:/b
-V/a:/b
-V /a:/b
--env=A=1
--env A=1
--e=A=1
--en
--env-f=/dev/null
--env-file /dev/null
--env-file
-eA=1
-e
--entrypoint=/bin/true
--entr=/bin/true
--ent
--entrypoint
--workdir=/
--wor=/
-w/
-w
--module=none
--mod none
-mnone
--help=1
--clearenv=1
--image
-i
--no-such-flag
--no-such-flag=1
-x
-vx
-- --no-such-flag
EOF
else
    fail "no C compiler for the getopt_long reference: $(cat "$SCRATCH/cc.log")"
fi

# 2. Abbreviations: argparse's allow_abbrev, as each contract says the real parser sets it.
for contract in "$contracts"/*.yaml; do
    parser=$("$py" -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); print(d["parser"], d.get("allow_abbrev"))' "$contract")
    case "$parser" in
    argparse\ True | argparse\ False) pass ;;
    argparse\ *) fail "$contract: an argparse parser without allow_abbrev: true|false" ;;
    esac
done
expect_status 3 "a contract without allow_abbrev is a broken set-up" -- "$py" -c '
import sys; sys.path.insert(0, "tests/doubles/lib")
import double_common as dc
dc.parse_argparse(["--a", "1"], {"framework": "x", "options": [{"name": "--abc"}]}, "x")'
expect_output "saying so" "has no allow_abbrev"

sglang() { (cd "$SCRATCH" && PYTHONPATH="$CCL_SOURCE_DIR/tests/doubles/images/sglang/site" \
    "$CCL_SOURCE_DIR/tests/doubles/images/sglang/bin/python3" -m sglang.bench_one_batch "$@"); }
expect_status 0 "SGLang takes a unique prefix (allow_abbrev true)" -- sglang --model-p m --result-filename "$SCRATCH/sg.jsonl"
expect_output "and says the contract cannot rule out an ambiguity" "--model-p taken as --model-path"
expect_status 2 "SGLang refuses an ambiguous prefix" -- sglang --model-path m --profile-s 1
expect_output "argparse's message" "bench_one_batch.py: error: ambiguous option: --profile-s could match --profile-stage, --profile-start-step, --profile-steps"
expect_status 2 "SGLang refuses an unknown option" -- sglang --model-path m --no-such-option
expect_output "argparse's message" "bench_one_batch.py: error: unrecognized arguments: --no-such-option"

vllm=tests/doubles/images/vllm-openai/bin/vllm
expect_status 0 "vLLM takes a unique prefix" -- "$vllm" bench latency --model m --num-iters-w 1 --num-iters 2
expect_output "the prefix's value" "Warming up... (1 batches"
expect_status 2 "vLLM refuses an ambiguous prefix" -- "$vllm" bench latency --model m --num-it 2
expect_output "in the bench's parser" "vllm bench latency: error: ambiguous option: --num-it could match --num-iters-warmup, --num-iters"
expect_status 2 "vLLM refuses an unknown option" -- "$vllm" bench latency --model m --no-such-option
expect_output "reported by the top parser" "vllm: error: unrecognized arguments: --no-such-option"
expect_status 0 "vLLM takes _ for - before the first ." -- "$vllm" bench latency --model m --num_iters_warmup 1 --num_iters 2
expect_status 2 "vLLM refuses a --profiler-config field the contract lacks" -- "$vllm" bench latency --model m --profiler-config.no_such 1
expect_status 0 "vLLM takes --profiler-config as JSON" -- "$vllm" bench latency --model m --profile \
    --profiler-config "{\"profiler\": \"torch\", \"torch_profiler_dir\": \"$SCRATCH/json-traces\"}"
[ -n "$(ls "$SCRATCH/json-traces" 2>/dev/null)" ] && pass || fail "--profiler-config JSON: no traces"

megatron() { "$py" tests/doubles/megatron-lm/pretrain_gpt.py "$@"; }
expect_status 0 "Megatron runs with full option names" -- megatron --micro-batch-size 1 --train-iters 1
expect_status 2 "Megatron refuses a unique prefix (allow_abbrev false)" -- megatron --micro-batch 1 --train-iters 1
expect_output "as unrecognized" "pretrain_gpt.py: error: unrecognized arguments: --micro-batch 1"

titan() { (cd tests/doubles/torchtitan && "$py" -m torchtitan.train "$@"); }
expect_status 2 "TorchTitan (tyro) refuses a prefix" -- titan --training.ste 5
expect_output "tyro's refusal" "Unrecognized options: --training.ste 5"

# 3. --help: exit 0 and every option of the contract, one a line, as the real parser prints it.
help_lists() { # help_lists WHAT CONTRACT: every option of CONTRACT starts a line of $OUT
    local name missing=()
    while read -r name; do
        grep -qE -- "^  (-[a-z]+, )?${name//./\\.}( |,|$)" <<<"$OUT" || missing+=("$name")
    done < <(contract_options "$2")
    [ ${#missing[@]} -eq 0 ] && pass || fail "$1: the help lacks ${missing[*]}:"$'\n'"$OUT"
}
expect_status 0 "SGLang --help" -- sglang --help
help_lists "SGLang --help" "$sglang_contract"
expect_status 0 "SGLang -h" -- sglang -h
expect_status 0 "Megatron --help" -- megatron --help
help_lists "Megatron --help" $contracts/megatron-lm-core_v0.15.3.yaml

# vLLM (vllm/utils/argparse_utils.py format_help): plain --help lists the config groups and points
# to --help=all, which lists every option; the dotted options are one --profiler-config there.
for double in vllm-openai:vllm-v0.19.0 vllm-tpu:tpu-inference-v0.27.0; do
    bin=tests/doubles/images/${double%%:*}/bin/vllm
    contract=$contracts/${double#*:}.yaml
    expect_status 0 "${double%%:*}: --help" -- env CCL_TPU_CHIPS=4 "$bin" bench latency --help
    expect_output "the config groups" "Config Groups:"
    expect_output "the way to every option" "vllm bench latency --help=all"
    grep -q -- "--model" <<<"$OUT" && fail "${double%%:*}: plain --help lists options:"$'\n'"$OUT" || pass
    expect_status 0 "${double%%:*}: --help=all" -- env CCL_TPU_CHIPS=4 "$bin" bench latency --help=all
    missing=()
    while read -r name; do
        grep -qE -- "^  ${name%%.*}( |$)" <<<"$OUT" || missing+=("$name")
    done < <(contract_options "$contract")
    [ ${#missing[@]} -eq 0 ] && pass || fail "${double%%:*}: --help=all lacks ${missing[*]}:"$'\n'"$OUT"
    expect_status 0 "${double%%:*}: --help=ModelConfig" -- env CCL_TPU_CHIPS=4 "$bin" bench latency --help=modelconfig
    expect_output "the group's options" "--model MODEL"
    grep -q -- "--num-iters" <<<"$OUT" && fail "${double%%:*}: --help=ModelConfig lists another group" || pass
done

# TorchTitan: tyro's help spells every dotted part with '-' for '_'.
expect_status 0 "TorchTitan --help" -- titan --no-such-option --help
missing=()
while read -r name; do
    spelled=${name//_/-}
    grep -qF -- "$spelled" <<<"$OUT" || missing+=("$spelled")
done < <(contract_options $contracts/torchtitan-v0.2.2.yaml)
[ ${#missing[@]} -eq 0 ] && pass || fail "TorchTitan --help lacks ${missing[*]}:"$'\n'"$OUT"

# MaxText has no option parser of its own: a key that base.yml lacks is pyconfig's ValueError.
maxtext() { (cd tests/doubles/maxtext && PYTHONPATH="$CCL_SOURCE_DIR/tests/doubles/lib" "$py" -m MaxText.train "$@"); }
expect_status 1 "MaxText refuses an unknown key" -- maxtext MaxText/configs/base.yml no_such_key=1
expect_output "pyconfig's message" "Key no_such_key was passed at the command line but isn't in config."
# torchprime (torchxla) reads Hydra overrides: a key the struct config lacks is Hydra's refusal.
torchprime() { (cd tests/doubles/torchprime && PYTHONPATH="$CCL_SOURCE_DIR/tests/doubles/lib" "$py" torchprime/torch_xla_models/train.py "$@"); }
expect_status 1 "torchprime refuses an unknown key" -- torchprime task.no_such_key=1
expect_output "Hydra's message" "Could not override 'task.no_such_key'."

# 4. vLLM's bench with --profile returns after the profiled batch: traces, and no --output-json.
expect_status 0 "vllm-openai --profile" -- "$vllm" bench latency --model m --profile --profiler-config.profiler torch \
    --profiler-config.torch_profiler_dir "$SCRATCH/gpu-traces" --output-json "$SCRATCH/gpu-profiled.json"
[ -n "$(ls "$SCRATCH/gpu-traces"/*.pt.trace.json.gz 2>/dev/null)" ] && pass || fail "vllm-openai --profile: no traces"
[ ! -e "$SCRATCH/gpu-profiled.json" ] && pass || fail "vllm-openai --profile wrote --output-json"
expect_status 0 "vllm-openai without --profile" -- "$vllm" bench latency --model m --num-iters 2 --output-json "$SCRATCH/gpu.json"
expect_json "$SCRATCH/gpu.json" 'len(j["latencies"])' 2
tpu=tests/doubles/images/vllm-tpu/bin/vllm
expect_status 0 "vllm-tpu --profile" -- env CCL_TPU_CHIPS=4 "$tpu" bench latency --model m --profile \
    --profiler-config.profiler torch --profiler-config.torch_profiler_dir "$SCRATCH/tpu-traces" --output-json "$SCRATCH/tpu-profiled.json"
[ -n "$(find "$SCRATCH/tpu-traces" -name '*.xplane.pb' 2>/dev/null)" ] && pass || fail "vllm-tpu --profile: no profile"
[ ! -e "$SCRATCH/tpu-profiled.json" ] && pass || fail "vllm-tpu --profile wrote --output-json"
expect_status 0 "vllm-tpu without --profile" -- env CCL_TPU_CHIPS=4 "$tpu" bench latency --model m --num-iters 2 \
    --output-json "$SCRATCH/tpu.json"
expect_json "$SCRATCH/tpu.json" 'len(j["latencies"])' 2

finish
