#!/bin/bash
# Containers the Perlmutter way (docs/containers.md): every Perlmutter reference card renders the
# podman-hpc build + migrate + run shape with the NCCL option of its CUDA major; Shifter gets
# docker:IMAGE with the matching module, and a digest with Shifter is refused by validate --strict
# and, at sbatch, by the test cluster's SPANK plugin (clusters/slurm-local/spank_shifter.c). The
# doubles (tests/doubles/podman-hpc, tests/doubles/shifter) enforce the runtimes' rules. Then the
# tiny-ddp card runs through slurm-local under the podman-hpc double, scaled to the one test node
# (2 ranks on nvidia_a100, driver cuda_12.9), and ends in a verified bundle naming the image built.
# The Slurm part is skipped when slurm-local is down; the rest always runs.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
py=/usr/bin/python3
digest13=nvcr.io/nvidia/pytorch@sha256:42263b2424fc237b34c4fc4a91c30d603c57eed36e37d31ff6d9a4f1f801edee
tagged=nvcr.io/nvidia/pytorch:25.09-py3

# The image doubles: tests/doubles/images/ when it has the PyTorch image, else a stand-in whose
# python3 is the system one (which has torch).
images=tests/doubles/images
if [ ! -x "$images/nvidia-pytorch/bin/python3" ]; then
    images="$SCRATCH/images"
    mkdir -p "$images/nvidia-pytorch/bin" "$images/nvidia-pytorch/site" "$images/vllm-openai/bin" "$images/sglang/bin"
    ln -sf /usr/bin/python3 "$images/nvidia-pytorch/bin/python3"
fi
export CCL_DOUBLE_IMAGES="$PWD/$images"
[ "${images#/}" != "$images" ] && export CCL_DOUBLE_IMAGES="$images"
export CCL_PODMAN_HPC_STATE="$SCRATCH/podman-hpc"
export CCL_SHIFTER_GATEWAY="$SCRATCH/shifter-gateway.txt"
podman="$PWD/tests/doubles/podman-hpc/podman-hpc"
shifterimg="$PWD/tests/doubles/shifter/shifterimg"
shifter="$PWD/tests/doubles/shifter/shifter"

field() { # field FILE EXPR: a Python expression over the JSON file (as p)
    "$py" -c 'import json, sys; p = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# 1. Every Perlmutter reference card, with podman-hpc: the build + migrate + run shape.
for card in workloads/*-perlmutter/*.yaml; do
    name=$(basename "$card" .yaml)
    out="$SCRATCH/render/$name"
    major=$(grep -o 'driver_version: cuda_[0-9]*' "$card" | grep -o '[0-9]*$')
    expect_status 0 "$name renders with podman-hpc" -- "$CCL_HARNESS" render "$card" --cluster perlmutter \
        --set launch.container.runtime=podman-hpc --out "$out"
    script="$out/launch.sbatch"
    tag=$(field "$out/plan.json" 'p["container"]["build"]')
    want="localhost/ccl-$(field "$out/plan.json" 'p["framework"]'):$(sha256sum <"$out/Containerfile" | cut -c1-16)"
    [ "$tag" = "$want" ] && pass || fail "$name: plan.json container.build $tag, expected $want"
    grep -qx "image=$tag" "$script" && pass || fail "$name: the script does not build $tag"
    # Built and migrated on the login node before sbatch (run, build): the job only checks.
    grep -q '^ *podman-hpc \(build\|migrate\)' "$script" && fail "$name: the job builds or migrates the image" || pass
    grep -q 'ccl-harness build.* for this card on the login node' "$script" && pass || fail "$name: no check of the image"
    head -n 1 "$out/Containerfile" | grep -q '^#' && grep -qx "FROM $(field "$out/plan.json" 'p["container"]["image"]')" "$out/Containerfile" &&
        pass || fail "$name: the Containerfile is not FROM the card's digest"
    if [ "$major" = 13 ]; then plugin=--nccl-cu13; else plugin=--nccl; fi
    grep -q "podman-hpc run --label \"ccl-harness.run=\$RUN_DIR\" --gpu $plugin --net host" "$script" && pass || fail "$name: CUDA $major needs $plugin"
    grep -q '^#SBATCH --image' "$script" && fail "$name: an --image line with podman-hpc" || pass
    grep -qx '#SBATCH --cpus-per-task=128' "$script" && pass || fail "$name: no --cpus-per-task=128"
    grep -qx 'export SRUN_CPUS_PER_TASK="$SLURM_CPUS_PER_TASK"' "$script" && pass || fail "$name: srun does not get the CPUs"
    # Every srun that runs framework code goes through the container.
    bad=$(sed -e ':a' -e '/\\$/{N;s/\\\n//;ba' -e '}' "$script" | grep '^[^#]*srun ' | grep -v 'container\[@\]\|mkdir -p\|=(srun \|podman-hpc ps \|podman-hpc container prune ' || true)
    [ -z "$bad" ] && pass || fail "$name: srun lines outside the container: $bad"
    bash -n "$script" && pass || fail "$name: bash -n"
    if command -v shellcheck >/dev/null; then
        shellcheck -s bash "$script" && pass || fail "$name: shellcheck"
    fi

    # As the card says (Shifter with a digest): refused by validate --strict, with the fix.
    expect_status 2 "$name: a digest with Shifter fails validate --strict" -- "$CCL_HARNESS" validate --strict "$card" --cluster perlmutter \
        --set launch.container.runtime=shifter
    expect_output "the output names it" "splits the name on ':'"
    expect_status 0 "$name renders with Shifter and a tag" -- "$CCL_HARNESS" render "$card" --cluster perlmutter \
        --set launch.container.runtime=shifter --set launch.container.image=$tagged --out "$out-shifter"
    if [ "$major" = 13 ]; then module=gpu,nccl-cu13-plugin; else module=gpu,nccl-plugin; fi
    grep -qx "#SBATCH --image=docker:$tagged" "$out-shifter/launch.sbatch" && pass || fail "$name: Shifter --image"
    grep -qx "#SBATCH --module=$module" "$out-shifter/launch.sbatch" && pass || fail "$name: Shifter module for CUDA $major"
    grep -qx 'container=(shifter)' "$out-shifter/launch.sbatch" && pass || fail "$name: shifter prefix"
done

# A GPU container needs the image's CUDA major; no container, no such rule.
card=workloads/qwen3-4b-torchtitan-perlmutter/qwen3-4b-torchtitan-perlmutter.yaml
expect_status 2 "a container without a CUDA major fails validate --strict" -- "$CCL_HARNESS" validate --strict "$card" \
    --cluster perlmutter --set launch.container.runtime=podman-hpc --set workload.hardware.driver_version=none \
    --set launch.container.cuda=
expect_output "the output names it" "workload.hardware.driver_version"
expect_status 2 "podman-hpc wants a digest" -- "$CCL_HARNESS" validate --strict "$card" --cluster perlmutter \
    --set launch.container.runtime=podman-hpc --set launch.container.image=$tagged
expect_output "the output names it" "is not pinned by digest"

# torch-ddp on Perlmutter never calls shifter without an image.
ddp=(--cluster tests/e2e/fixtures/perlmutter-on-slurm-local.yaml --set workload.hardware.xpu_spec.model=nvidia_a100
    --set launch.account=m4999 --set workload.hardware.driver_version=cuda_12.9 --set "launch.container.image=$digest13")
expect_status 0 "tiny-ddp renders with Shifter" -- "$CCL_HARNESS" render workloads/tiny-ddp/tiny-ddp.yaml "${ddp[@]}" \
    --set launch.container.runtime=shifter --out "$SCRATCH/ddp-shifter"
grep -qx "#SBATCH --image=docker:$digest13" "$SCRATCH/ddp-shifter/launch.sbatch" && pass || fail "torch-ddp: Shifter without --image"
grep -qx '#SBATCH --cpus-per-task=64' "$SCRATCH/ddp-shifter/launch.sbatch" && pass || fail "torch-ddp: 128 CPUs / 2 tasks"
expect_status 0 "tiny-ddp renders with Shifter and no image" -- "$CCL_HARNESS" render workloads/tiny-ddp/tiny-ddp.yaml "${ddp[@]}" \
    --set launch.container.runtime=shifter --set launch.container.image= --out "$SCRATCH/ddp-noimage"
grep -q 'shifter' <(grep -v '^#' "$SCRATCH/ddp-noimage/launch.sbatch") && fail "torch-ddp calls shifter without an image" || pass
grep -q "no image for the container runtime" "$SCRATCH/ddp-noimage/launch.sbatch" && pass || fail "no image: no reason given"

# 2. The doubles enforce the runtimes' rules.
work="$SCRATCH/build"
mkdir -p "$work"
printf 'FROM %s\nRUN true\n' "$digest13" >"$work/Containerfile"
expect_status 0 "podman-hpc build of a known base" -- "$podman" build -t localhost/probe:1 -f "$work/Containerfile" "$work"
expect_status 125 "an image that was not migrated does not run" -- "$podman" run --rm localhost/probe:1 true
expect_output "the output names it" "migrate"
expect_status 0 "migrate" -- "$podman" migrate localhost/probe:1
[ -n "$("$podman" images --quiet localhost/probe:1)" ] && pass || fail "images does not list the migrated image"
expect_status 0 "a migrated image runs" -- env FOO=host "$podman" run --rm --gpu --nccl localhost/probe:1 sh -c 'echo "FOO=${FOO:-unset}"'
expect_output "the output names it" "FOO=unset"
expect_status 0 "--env NAME passes the host's value" -- env FOO=host "$podman" run --rm --env FOO localhost/probe:1 sh -c 'echo "FOO=$FOO"'
expect_output "the output names it" "FOO=host"
expect_status 0 "the image's python3 comes first" -- "$podman" run --rm localhost/probe:1 sh -c 'command -v python3'
expect_output "the output names it" "nvidia-pytorch/bin/python3"
printf 'FROM docker.io/library/ubuntu:24.04\n' >"$work/Other"
expect_status 125 "an unknown base is refused" -- "$podman" build -t localhost/other:1 -f "$work/Other" "$work"
expect_status 125 "an unknown run option is refused" -- "$podman" run --bogus localhost/probe:1 true
expect_status 1 "shifterimg cannot pull a digest" -- "$shifterimg" pull "docker:$digest13"
expect_status 0 "shifterimg pulls a tag" -- "$shifterimg" pull "docker:$tagged"
expect_status 0 "shifterimg lookup gives the gateway id" -- "$shifterimg" lookup "docker:$tagged"
expect_status 1 "shifter without an image fails" -- env -u SLURM_SPANK__SLURM_SPANK_OPTION_shifter_image "$shifter" true
expect_output "the output names it" "No image specified"
expect_status 0 "shifter runs a pulled image" -- "$shifter" --image="docker:$tagged" sh -c 'command -v python3'
expect_output "the output names it" "nvidia-pytorch/bin/python3"

# 3. Through slurm-local: the SPANK plugin at sbatch, and tiny-ddp under the podman-hpc double.
cluster=clusters/slurm-local/cluster.sh
if ! bash "$cluster" status >/dev/null 2>&1; then
    echo "skip: the slurm-local test cluster is not running (bash $cluster start): Slurm checks skipped"
    finish
fi
eval "$(bash "$cluster" env)"
if grep -q 'spank_shifter\.so' "$(dirname "$SLURM_CONF")/plugstack.conf"; then
    (cd "$SCRATCH/ddp-shifter" && sbatch --test-only launch.sbatch) >"$SCRATCH/sbatch.out" 2>&1 &&
        fail "sbatch took a digest as Shifter's --image" || pass
    grep -q "Failed to lookup image" "$SCRATCH/sbatch.out" && pass || fail "sbatch: $(cat "$SCRATCH/sbatch.out")"
    expect_status 0 "sbatch takes id:" -- sbatch --test-only --image=id:0123abcd --wrap=true
else
    echo "note: the running slurm-local has the old no-op SPANK plugin (restart it to load spank_shifter.so): SPANK checks skipped"
fi
export PATH="$PWD/tests/doubles/podman-hpc:$PATH"
results="$SCRATCH/results"
expect_status 0 "tiny-ddp through slurm-local under podman-hpc" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml "${ddp[@]}" \
    --set launch.container.runtime=podman-hpc --results "$results"
run=$(latest_run)
bundle="${run%/}.tar.zst"
expect_status 0 "the podman-hpc run's bundle verifies" -- "$CCL_HARNESS" verify "$bundle"
built=$(field "$run/rendered/plan.json" 'p["container"]["build"]')
grep -qF -- "\"$built\"" "$CCL_PODMAN_HPC_STATE/squash.json" && pass || fail "the job did not migrate $built"
name=$(basename "$bundle" .tar.zst)
tar --zstd -xOf "$bundle" "$name/scripts/plan.json" | "$py" -c 'import json, sys; assert json.load(sys.stdin)["container"]["build"] == sys.argv[1]' "$built" && pass ||
    fail "the bundle's plan.json does not name the image built"
[ "$(field "$run/provenance.json" 'p["container"]["runtime"]')" = podman-hpc ] && pass || fail "provenance runtime"
# Both ranks ran in the image built, through the double's run (which logs each start).
[ "$(grep -c "^$built python3 .*ccl_probe.py" "$CCL_PODMAN_HPC_STATE/runs.log")" = 2 ] && pass ||
    fail "the ranks did not run in $built: $(cat "$CCL_PODMAN_HPC_STATE/runs.log")"
# A second run reuses the image: same Containerfile, same tag, no second build.
before=$(stat -c %Y "$CCL_PODMAN_HPC_STATE/local.json")
expect_status 0 "a second run reuses the migrated image" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml "${ddp[@]}" \
    --set launch.container.runtime=podman-hpc --results "$results"
[ "$(stat -c %Y "$CCL_PODMAN_HPC_STATE/local.json")" = "$before" ] && pass || fail "the second run built again"
# An image the job did not migrate is refused on the compute node.
"$py" - "$CCL_PODMAN_HPC_STATE/squash.json" <<'EOF'
import json, sys
json.dump({}, open(sys.argv[1], "w"))
EOF
mkdir -p "$SCRATCH/nomigrate"
cp "$run/rendered/Containerfile" "$SCRATCH/nomigrate/"
"$podman" build -t "$built" -f "$SCRATCH/nomigrate/Containerfile" "$SCRATCH/nomigrate" >/dev/null
expect_status 125 "the double refuses the built but unmigrated image" -- "$podman" run --rm "$built" true
expect_output "the output names it" "built but not migrated"
finish
