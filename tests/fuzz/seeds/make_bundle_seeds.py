#!/usr/bin/python3
"""Writes the hand-made hostile bundle seeds in bundle/ (run once; the outputs are committed).

Each is a .tar.zst holding one classic archive attack or oddity beside a bundle-shaped tree: the
fuzzer starts from the refusals as well as from the bundle .ci/fuzz packs. Tar records are cut to
the end-of-archive blocks so that the seeds stay a few hundred bytes.
"""
import io
import subprocess
import tarfile

NAME = "r-20260101T000000Z-000000"


def entry(name, data=b"", kind=tarfile.REGTYPE, link="", pax=None):
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size, info.mtime = kind, link, len(data), 946684800
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    if pax:
        info.pax_headers = pax
    return info, data


def bundle_tree():
    return [entry(NAME, kind=tarfile.DIRTYPE),
            entry(f"{NAME}/manifest.json", b'{"files": [{"path": "run.json", "sha256": "' + b"0" * 64 + b'", "size": 2}], "format": 1}'),
            entry(f"{NAME}/run.json", b"{}"),
            entry(f"{NAME}/kineto_trace_0.json", b'{"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "ts": 0, "dur": 1}]}')]


def write(path, entries, extra=b""):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    raw = buffer.getvalue().rstrip(b"\0")
    raw += b"\0" * (-len(raw) % 512) + b"\0" * 1024
    packed = subprocess.run(["zstd", "-q", "-19", "-c"], input=raw, check=True, stdout=subprocess.PIPE).stdout
    with open(path, "wb") as out:
        out.write(packed + extra)


write("bundle/plain.tar.zst", bundle_tree())
write("bundle/dotdot.tar.zst", bundle_tree() + [entry(f"{NAME}/../escape", b"x")])
write("bundle/absolute.tar.zst", bundle_tree() + [entry("/tmp/ccl-fuzz-absolute", b"x")])
write("bundle/symlink.tar.zst", bundle_tree() + [entry(f"{NAME}/link", kind=tarfile.SYMTYPE, link="/etc"),
                                                 entry(f"{NAME}/link/passwd", b"x")])
write("bundle/hardlink.tar.zst", bundle_tree() + [entry(f"{NAME}/hard", kind=tarfile.LNKTYPE, link="/etc/passwd")])
write("bundle/fifo.tar.zst", bundle_tree() + [entry(f"{NAME}/fifo", kind=tarfile.FIFOTYPE)])
write("bundle/duplicate.tar.zst", bundle_tree() + [entry(f"{NAME}/run.json", b'{"state": "completed"}')])
write("bundle/pax_path.tar.zst", bundle_tree() + [entry(f"{NAME}/short", b"x", pax={"path": f"{NAME}/" + "d/" * 60 + "../" * 70 + "x"})])
write("bundle/two_top.tar.zst", bundle_tree() + [entry("other", kind=tarfile.DIRTYPE)])
write("bundle/control_name.tar.zst", bundle_tree() + [entry(f"{NAME}/\x1b[2K\rvalid.json", b"x")])
# A second zstd frame after the tar's end (a second archive, or any data): issue 13.
write("bundle/extra_frame.tar.zst", bundle_tree(), extra=subprocess.run(
    ["zstd", "-q", "-c"], input=b"hidden payload", check=True, stdout=subprocess.PIPE).stdout)
