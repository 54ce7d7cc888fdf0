#!/bin/bash
# Issue 31: the image archive a bundle carries (container/image.oci.tar, what `pack --with-image`
# adds and reproduce hands to `podman load`) is checked by verify without unpacking it. A member
# named ../x or /etc/x, a link leaving the archive, a FIFO or device, a truncated archive, no tar
# at all, or an archive without the image-layout spec's index.json and oci-layout fails the bundle,
# naming the member; reproduce refuses such a bundle before any container runtime is called. A
# well-formed archive (podman's layout, or GNU tar's "./" form) passes. No podman is needed.
source "$(dirname "$0")/lib.sh"
cd "$CCL_SOURCE_DIR"
fixture="$CCL_SOURCE_DIR/tests/e2e/fixtures/bundle_fixture.py"
PY=/usr/bin/python3
results="$SCRATCH/results"
archive_name=container/image.oci.tar

# verify unpacks archives under $TMPDIR: a fresh one shows whether anything is left behind.
tmp="$SCRATCH/tmp"
mkdir -p "$tmp"
verify() { TMPDIR="$tmp" "$CCL_HARNESS" verify "$@"; }
no_leftovers() { # no_leftovers WHAT
    if [ -z "$(ls -A "$tmp")" ]; then pass; else fail "$1: left in TMPDIR: $(ls -A "$tmp")"; rm -rf "${tmp:?}"/*; fi
}

# make_oci KIND OUT: an OCI image archive as podman save writes one (blobs/sha256/<config>,
# <manifest>, index.json, oci-layout), then, for a hostile KIND, the one member that makes it so.
make_oci() {
    "$PY" - "$1" "$2" <<'PY'
import hashlib, io, json, sys, tarfile
kind, out = sys.argv[1], sys.argv[2]

def member(tar, name, data=b"", **fields):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 946684800
    for key, value in fields.items():
        setattr(info, key, value)
    tar.addfile(info, io.BytesIO(data) if info.isreg() else None)

def blob(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()

config = json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": []}}).encode()
manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": blob(config),
                                  "size": len(config)}, "layers": []}).encode()
index = json.dumps({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                                       "digest": blob(manifest), "size": len(manifest)}]}).encode()
prefix = "./" if kind == "gnu-dot" else ""
files = {"blobs/sha256/" + blob(config)[7:]: config, "blobs/sha256/" + blob(manifest)[7:]: manifest,
         "index.json": index, "oci-layout": b'{"imageLayoutVersion": "1.0.0"}'}
if kind == "no-index":
    del files["index.json"]
if kind == "no-layout":
    del files["oci-layout"]
if kind == "not-tar":
    open(out, "wb").write(b"this is not a tar archive\n" * 40)
    sys.exit(0)
raw = io.BytesIO()
with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
    if prefix:
        member(tar, "./", type=tarfile.DIRTYPE, mode=0o755)
    for directory in ("blobs", "blobs/sha256"):
        member(tar, prefix + directory, type=tarfile.DIRTYPE, mode=0o755)
    for name, data in sorted(files.items()):
        member(tar, prefix + name, data)
    hostile = {
        "dotdot": ("../x", {}),
        "absolute": ("/etc/x", {}),
        "symlink-root": ("rootfs", {"type": tarfile.SYMTYPE, "linkname": "/"}),
        "symlink-up": ("blobs/sha256/up", {"type": tarfile.SYMTYPE, "linkname": "../../../x"}),
        "hardlink-out": ("passwd", {"type": tarfile.LNKTYPE, "linkname": "../../etc/passwd"}),
        "fifo": ("pipe", {"type": tarfile.FIFOTYPE}),
        "device": ("null", {"type": tarfile.CHRTYPE, "devmajor": 1, "devminor": 3}),
        "control": ("bad\x1bname", {}),
        "second-index": ("index.json", {}),
    }
    if kind in hostile:
        name, fields = hostile[kind]
        member(tar, name, b"evil" if "type" not in fields else b"", **fields)
data = raw.getvalue()
if kind == "truncated":
    # Cut inside the config blob's data: every header before it is whole.
    data = data[:data.index(config) + len(config) // 2]
open(out, "wb").write(data)
PY
}

# 1. A real run, assembled into a bundle as docs/bundle.md lays it out.
expect_status 0 "tiny-ddp runs" -- "$CCL_HARNESS" run workloads/tiny-ddp/tiny-ddp.yaml --results "$results"
bundles="$SCRATCH/bundles"
assemble_latest_run "$bundles"

# with_image CASE KIND: a copy of the bundle under $SCRATCH/CASE/<name> carrying a KIND image
# archive, its manifest rewritten to list it, and its .tar.zst beside it.
with_image() {
    rm -rf "${SCRATCH:?}/$1"
    mkdir -p "$SCRATCH/$1"
    cp -r "$bundle" "$SCRATCH/$1/"
    copy="$SCRATCH/$1/$name"
    copy_archive="$SCRATCH/$1/$name.tar.zst"
    mkdir -p "$copy/container"
    make_oci "$2" "$copy/$archive_name"
    "$PY" "$fixture" manifest "$copy"
    pack_dir "$SCRATCH/$1" "$name" "$copy_archive"
}

# 2. Well-formed archives pass, as a directory and as a .tar.zst.
for kind in good gnu-dot; do
    with_image "$kind" "$kind"
    expect_status 0 "an image archive ($kind) verifies (directory)" -- verify "$copy"
    expect_status 0 "an image archive ($kind) verifies (archive)" -- verify "$copy_archive"
    expect_output "$kind: summary" "$copy_archive: valid ("
    no_leftovers "$kind"
done

# 3. Each hostile archive fails the bundle, naming the member, in the directory and in its
#    .tar.zst; --json carries the same problem.
expect_unsafe() { # expect_unsafe KIND NEEDLE
    with_image "$1" "$1"
    expect_status 1 "$1 (directory)" -- verify "$copy"
    expect_output "$1 (directory)" "$copy: $archive_name: $2"
    expect_output "$1 (directory): one problem" "invalid (1 problem)"
    expect_status 1 "$1 (archive)" -- verify "$copy_archive"
    expect_output "$1 (archive)" "$copy_archive: $archive_name: $2"
    no_leftovers "$1"
}
expect_unsafe dotdot 'member "../x": a ".." component (a path that leaves its directory)'
expect_unsafe absolute 'member "/etc/x": an absolute path'
expect_unsafe symlink-root 'member "rootfs": a symbolic link to the absolute path "/"'
expect_unsafe symlink-up 'member "blobs/sha256/up": a symbolic link to "../../../x", outside the archive'
expect_unsafe hardlink-out 'member "passwd": a hard link to "../../etc/passwd": a ".." component'
expect_unsafe fifo 'member "pipe": a FIFO'
expect_unsafe device 'member "null": a device node'
expect_unsafe control 'member "bad\u001bname": a control character in the name'
expect_unsafe second-index 'member "index.json": index.json twice'
expect_unsafe truncated 'truncated: member "blobs/sha256/'
expect_unsafe not-tar 'not a tar archive'
expect_unsafe no-index 'not an OCI image archive: no index.json'
expect_unsafe no-layout 'not an OCI image archive: no oci-layout'
with_image json dotdot
expect_status 1 "--json" -- verify --json "$copy"
printf '%s' "$OUT" >"$SCRATCH/verify.json"
expect_json "$SCRATCH/verify.json" '[(p["path"], p["message"]) for p in j["problems"]]' \
    "[('$archive_name', 'member \"../x\": a \"..\" component (a path that leaves its directory)')]" "--json names the member"

# 4. reproduce verifies first: a bundle with such an archive is refused (exit 1, the member named)
#    before anything runs. A podman on PATH that records its calls shows it was never asked to
#    load the archive.
mkdir -p "$SCRATCH/bin"
printf '#!/bin/sh\necho "$@" >>"%s"\nexit 1\n' "$SCRATCH/podman-calls" >"$SCRATCH/bin/podman"
chmod +x "$SCRATCH/bin/podman"
for kind in symlink-root truncated; do
    expect_status 1 "reproduce refuses a bundle whose image archive is $kind" -- \
        env PATH="$SCRATCH/bin:$PATH" TMPDIR="$tmp" "$CCL_HARNESS" reproduce "$SCRATCH/$kind/$name.tar.zst" \
        --results "$SCRATCH/reproduced-$kind"
    expect_output "reproduce $kind: the member" "$archive_name: "
    expect_output "reproduce $kind: not reproduced" "invalid bundle"
    [ ! -e "$SCRATCH/reproduced-$kind" ] || [ -z "$(ls -A "$SCRATCH/reproduced-$kind")" ] && pass ||
        fail "reproduce $kind left a run: $(ls -A "$SCRATCH/reproduced-$kind")"
    no_leftovers "reproduce $kind"
done
[ ! -e "$SCRATCH/podman-calls" ] && pass || fail "podman was called: $(cat "$SCRATCH/podman-calls")"

finish
