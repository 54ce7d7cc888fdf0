#!/bin/bash
# Issue 17: tiny-ddp in a container image the harness builds (docs/containers.md), for real with
# this machine's podman. The base is made from Debian packages (containers/base/bookworm-torch.yaml:
# mmdebstrap, then podman import; about 80 s the first time, reused afterwards), the rendered
# Containerfile is built on it, and each rank runs in it:
#   1. locally (podman run per rank, host network for gloo);
#   2. through slurm-local with the Perlmutter job script, under a podman-hpc double that passes
#      everything to the real podman but enforces podman-hpc's own rules
#      (tests/doubles/podman-hpc-on-podman; skipped when slurm-local is down);
#   3. reproduce: the same image reused and said so; an image whose packages differ refused with
#      the difference, unless --allow-image-drift; pack --with-image carries the image in the
#      bundle, and reproduce loads it from there when this machine lacks it.
# Every bundle verifies and its provenance names the image id the runtime reports ran.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
if ! command -v podman >/dev/null || ! command -v mmdebstrap >/dev/null; then
    echo "container_run: skipped: podman or mmdebstrap is not installed (.ci/setup installs them)" >&2
    exit 125
fi
card=workloads/tiny-ddp/tiny-ddp.yaml
results="$SCRATCH/results"
image=(--set launch.container.image=ccl-base:bookworm-torch)

# checks_image RUN: the provenance names the image that ran, which is the one built, in every rank.
checks_image() {
    local run=$1 ranks=$2 built id
    built=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["container"]["build"])' "$run/rendered/plan.json")
    id=$(podman image inspect --format '{{.Id}}' "$built")
    expect_json "$run/provenance.json" 'j["container"]["image_id"]' "$id" "provenance: the image that ran is $built"
    expect_json "$run/provenance.json" 'sorted({c["image_id"] for c in j["container"]["ran"]})' "['$id']" "every container ran $built"
    expect_json "$run/provenance.json" 'len(j["container"]["ran"])' "$ranks" "one container per rank"
    expect_json "$run/provenance.json" 'j["container"]["containerfile_sha256"]' "$(sha256sum "$run/rendered/Containerfile" | cut -d' ' -f1)" \
        "provenance: the Containerfile's sha256"
    expect_json "$run/provenance.json" 'j["container"]["base"]["tag"].startswith("localhost/ccl-base/bookworm-torch:")' True \
        "provenance: the base"
    grep -q '^python3-torch=' "$run/container/packages.txt" && pass || fail "$run: no python3-torch in the image's packages"
    [ -z "$(podman ps --all --quiet --filter "label=ccl-harness.run=${run%/}/rendered")" ] && pass || fail "$run: containers left behind"
}

# 1. Locally.
expect_status 0 "tiny-ddp in podman, locally" -- "$CCL_HARNESS" run "$card" --set launch.container.runtime=podman "${image[@]}" \
    --results "$results"
expect_output "it says which image" "image: "
run=$(latest_run)
bundle="${run%/}.tar.zst"
expect_status 0 "the bundle verifies" -- "$CCL_HARNESS" verify "$bundle"
checks_image "$run" 2
expect_json "$run/run.json" 'len(j["traces"])' 2 "two traces"

# 2. reproduce: the same image, reused.
expect_status 0 "reproduce reuses the image" -- "$CCL_HARNESS" reproduce "$bundle" --results "$SCRATCH/reproduced"
expect_output "it says it reused it" "image: reused"
expect_output "it says it is the bundle's" "ran (id "

# 3. An image with other packages under the same tag: refused with the difference.
built=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["container"]["build"])' "$run/rendered/plan.json")
original=$(podman image inspect --format '{{.Id}}' "$built")
mkdir -p "$SCRATCH/drift"
printf 'FROM %s\nRUN dpkg --purge --force-depends procps\n' "$original" >"$SCRATCH/drift/Containerfile"
podman build --quiet --tag "$built" "$SCRATCH/drift" >/dev/null
expect_status 1 "reproduce refuses an image whose packages differ" -- "$CCL_HARNESS" reproduce "$bundle" --results "$SCRATCH/drifted"
expect_output "it shows the difference" "procps"
expect_output "it says how to go on" "--allow-image-drift"
expect_status 0 "--allow-image-drift runs anyway" -- "$CCL_HARNESS" reproduce "$bundle" --allow-image-drift --results "$SCRATCH/drifted"
podman tag "$original" "$built"
podman image prune --force >/dev/null 2>&1 || true

# 3b. pack --with-image: the bundle carries the image that ran, and reproduces without it here.
with_image="$SCRATCH/with-image.tar.zst"
expect_status 0 "pack --with-image" -- "$CCL_HARNESS" pack "$run" --with-image --out "$with_image"
expect_status 0 "the bundle with its image verifies" -- "$CCL_HARNESS" verify "$with_image"
tar --zstd -tf "$with_image" >"$SCRATCH/with-image.list"
grep -q '/container/image.oci.tar$' "$SCRATCH/with-image.list" && pass || fail "no container/image.oci.tar in the bundle"
podman rmi --force "$built" >/dev/null
expect_status 0 "reproduce loads the bundle's image" -- "$CCL_HARNESS" reproduce "$with_image" --results "$SCRATCH/offline"
expect_output "it says it loaded it" "image: loaded from"
expect_output "and that it is the one that ran" "ran (id ${original:0:12})"
[ "$(podman image inspect --format '{{.Id}}' "$built")" = "$original" ] && pass || fail "the loaded image is not the one that ran"
mkdir -p "$SCRATCH/plain"
echo '{"container": null}' >"$SCRATCH/plain/provenance.json"
expect_status 2 "--with-image on a run without a container" -- "$CCL_HARNESS" pack "$SCRATCH/plain" --with-image
expect_output "it says why" "names no image that ran"

# 4. Bad inputs: one clear error, nothing run.
expect_status 2 "an unknown base spec" -- "$CCL_HARNESS" run "$card" --set launch.container.runtime=podman \
    --set launch.container.image=ccl-base:no-such-base --results "$SCRATCH/bad"
expect_output "it names the file" "containers/base/no-such-base.yaml"
[ ! -e "$SCRATCH/bad" ] || [ -z "$(ls -A "$SCRATCH/bad")" ] && pass || fail "a run directory was left for an unknown base"
expect_status 2 "a base name that is no file name" -- "$CCL_HARNESS" validate --strict "$card" --set launch.container.runtime=podman \
    --set launch.container.image=ccl-base:../etc
expect_status 2 "podman with an unpinned image" -- "$CCL_HARNESS" validate --strict "$card" --set launch.container.runtime=podman \
    --set launch.container.image=debian:12
expect_output "it says why" "not pinned by digest"

# 5. Through slurm-local, the Perlmutter job script under podman-hpc.
cluster=clusters/slurm-local/cluster.sh
if ! bash "$cluster" status >/dev/null 2>&1; then
    echo "skip: the slurm-local test cluster is not running (bash $cluster start): Slurm checks skipped"
    finish
fi
eval "$(bash "$cluster" env)"
export PATH="$PWD/tests/doubles/podman-hpc-on-podman:$PATH" CCL_PODMAN_HPC_STATE="$SCRATCH/podman-hpc"
slurm=(--cluster tests/e2e/fixtures/perlmutter-on-slurm-local.yaml --set workload.hardware.xpu_spec.model=nvidia_a100
    --set launch.account=m4999 --set workload.hardware.driver_version=cuda_12.9 --set launch.container.runtime=podman-hpc)
expect_status 0 "tiny-ddp in podman-hpc through slurm-local" -- "$CCL_HARNESS" run "$card" "${slurm[@]}" "${image[@]}" \
    --results "$results"
run=$(latest_run)
expect_status 0 "the Slurm run's bundle verifies" -- "$CCL_HARNESS" verify "${run%/}.tar.zst"
checks_image "$run" 2
ls "$run"/container/ran-*.json >/dev/null 2>&1 && pass || fail "the job wrote no container/ran-<node>.json"
expect_status 0 "reproduce of the Slurm bundle" -- "$CCL_HARNESS" reproduce "${run%/}.tar.zst" \
    --cluster tests/e2e/fixtures/perlmutter-on-slurm-local.yaml --results "$SCRATCH/reproduced-slurm"
expect_output "it says it reused the image" "image: reused"
expect_output "and that it is the bundle's" "ran (id "
# The double enforces podman-hpc's rule: an image that was not migrated does not run.
echo '{}' >"$CCL_PODMAN_HPC_STATE/squash.json"
expect_status 125 "podman-hpc refuses an image that was not migrated" -- podman-hpc run --rm "$built" true
expect_output "it says why" "migrate"
finish
