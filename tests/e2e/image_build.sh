#!/bin/bash
# `ccl-harness build`: a base image made from Debian packages (mmdebstrap + podman import) and an
# image built on it from a hand-written Containerfile, with real podman. The base is shared with
# every other user of this machine (localhost/ccl-base/*): built here only when missing, never
# removed. The image this suite builds has a tag of its own (its Containerfile names this build
# tree) and is removed at the end. Skipped (125) without podman or mmdebstrap; a base that must
# be built needs network to deb.debian.org.
source "$(dirname "$0")/lib.sh"
for tool in podman mmdebstrap; do
    command -v "$tool" >/dev/null || { echo "image_build: skipped: no $tool (run .ci/setup)" >&2; exit 125; }
done

# A home of our own: the shipped templates, clusters and base specs, and a torch-ddp
# Containerfile written here, FROM the base, with a line that makes its tag this suite's alone.
home="$SCRATCH/home"
mkdir -p "$home/containers/base"
for dir in templates clusters workloads; do ln -s "$CCL_SOURCE_DIR/$dir" "$home/$dir"; done
cp "$CCL_SOURCE_DIR"/containers/base/*.yaml "$home/containers/base/"
marker=$(sha256sum <<<"$CCL_TEST_TMP" | cut -c1-16)
cat >"$home/containers/torch-ddp.Containerfile.mustache" <<EOF_CONTAINERFILE
# Written by tests/e2e/image_build.sh.
FROM {{container_image}}
LABEL org.ccl-harness.test="image_build $marker"
RUN echo "$marker" >/etc/ccl-harness-e2e
WORKDIR /workspace
EOF_CONTAINERFILE
# Issue 26: the harness's children start with stdin, stdout and stderr only. Descriptors 3-12
# stay open in this shell (as a CI runner, ctest or a multiplexer leaves them): mmdebstrap, given
# them, numbered its pipe above 9 and apt's `cat >&N` hook failed in dash ("Bad fd number").
for fd in 3 4 5 6 7 8 9 10 11 12; do eval "exec $fd</dev/null"; done
export TMPDIR="$SCRATCH/tmp"
mkdir -p "$TMPDIR"
card="$CCL_SOURCE_DIR/workloads/tiny-ddp/tiny-ddp.yaml"
harness=("$CCL_HARNESS" --home "$home")
podman_set=(--set launch.container.runtime=podman)
built_tag=""
cleanup() { if [ -n "$built_tag" ]; then podman rmi --force "$built_tag" >/dev/null 2>&1 || true; fi; }
trap cleanup EXIT

# The image's tag, without building, so a leftover from a killed run can be removed first.
expect_status 0 "render with the base" -- "${harness[@]}" render "$card" "${podman_set[@]}" \
    --set launch.container.image=ccl-base:bookworm-torch --out "$SCRATCH/rendered"
tag=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["container"]["build"])' "$SCRATCH/rendered/plan.json")
case "$tag" in localhost/ccl-torch-ddp:*) pass ;; *) fail "plan.json names no image to build: [$tag]" ;; esac
built_tag=$tag
podman rmi --force "$tag" >/dev/null 2>&1 || true
grep -qx "FROM localhost/ccl-base/bookworm-torch:[0-9a-f]\{16\}" "$SCRATCH/rendered/Containerfile" && pass ||
    fail "the rendered Containerfile is not FROM the base: $(grep FROM "$SCRATCH/rendered/Containerfile")"

# ---- the first build: the base (built or reused) and the image ----
start=$(date +%s)
expect_status 0 "build" -- "${harness[@]}" build "$card" "${podman_set[@]}" --set launch.container.image=ccl-base:bookworm-torch --json
first=$(($(date +%s) - start))
printf '%s' "$OUT" | sed -n '/^{/,$p' >"$SCRATCH/first.json"
expect_json "$SCRATCH/first.json" 'j["tag"]' "$tag"
expect_json "$SCRATCH/first.json" 'j["built"]' True
expect_json "$SCRATCH/first.json" 'j["image_id"]' "$(podman image inspect --format '{{.Id}}' "$tag" 2>&1)"
base=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["base_tag"])' "$SCRATCH/first.json")
case "$base" in localhost/ccl-base/bookworm-torch:*) pass ;; *) fail "base_tag: [$base]" ;; esac
expect_json "$SCRATCH/first.json" 'j["base_id"]' "$(podman image inspect --format '{{.Id}}' "$base" 2>&1)"
expect_json "$SCRATCH/first.json" 'any(l.startswith("python3-torch=") for l in j["packages"].splitlines())' True
expect_json "$SCRATCH/first.json" 'len(j["containerfile_sha256"])' 64
expect_json "$SCRATCH/first.json" 'j["rendered"]' None
echo "image_build: first build $first s (base built: $(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["base_built"])' "$SCRATCH/first.json"))"
# The image holds what the Containerfile put there.
expect_status 0 "the image runs" -- podman run --rm --network none "$tag" cat /etc/ccl-harness-e2e
expect_output "the image is this suite's" "$marker"

# ---- the second build reuses it, quickly, and says so ----
start=$(date +%s)
expect_status 0 "build again" -- "${harness[@]}" build "$card" "${podman_set[@]}" --set launch.container.image=ccl-base:bookworm-torch --out "$SCRATCH/kept"
second=$(($(date +%s) - start))
expect_output "reused" "image $tag: reused (already built)"
expect_output "the same id" "$(podman image inspect --format '{{.Id}}' "$tag")"
expect_output "the base" "base           $base"
[ -f "$SCRATCH/kept/Containerfile" ] && pass || fail "--out keeps no Containerfile"
[ "$second" -le 20 ] && pass || fail "a reused image took $second s"
echo "image_build: reuse $second s"

# ---- what fails, fails once, clearly, leaving nothing behind ----
images_now() { podman images --format '{{.Repository}}:{{.Tag}}' | sort; }
before=$(images_now)
cat >"$home/containers/base/broken.yaml" <<'EOF_SPEC'
suite: bookworm
mirror: http://deb.debian.org/debian
packages: [python3]
packagez: [git]
EOF_SPEC
expect_status 2 "a bad base spec" -- "${harness[@]}" build "$card" "${podman_set[@]}" --set launch.container.image=ccl-base:broken
expect_output "names file:line and the field" "containers/base/broken.yaml:4:1: \"packagez\": unknown field (did you mean packages?)"
expect_eq "one error line" 1 "$(grep -c 'error' <<<"$OUT")"
expect_status 2 "a base that does not exist" -- "${harness[@]}" build "$card" "${podman_set[@]}" --set launch.container.image=ccl-base:nosuch
expect_output "names the missing spec" "nosuch.yaml"
stale="localhost/ccl-base/bookworm-torch:0000000000000000"
expect_status 2 "a FROM with a stale base key" -- "${harness[@]}" build "$card" "${podman_set[@]}" --set "launch.container.image=$stale"
expect_output "says the spec changed" "FROM $stale: containers/base/bookworm-torch.yaml changed since this Containerfile was rendered"
cat >"$home/containers/base/nopackage.yaml" <<'EOF_SPEC'
# A package no Debian suite has: mmdebstrap fails after reading the mirror's index.
suite: bookworm
mirror: http://deb.debian.org/debian
packages: [ccl-harness-no-such-package]
EOF_SPEC
expect_status 1 "a base mmdebstrap cannot make" -- "${harness[@]}" build "$card" "${podman_set[@]}" --set launch.container.image=ccl-base:nopackage
expect_output "says mmdebstrap failed" "mmdebstrap failed"
expect_eq "no image was left behind" "$before" "$(images_now)"
expect_eq "no temporary file was left behind" "" "$(ls -A "$TMPDIR")"

finish
