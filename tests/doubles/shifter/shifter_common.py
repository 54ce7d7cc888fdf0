"""What the shifter and shifterimg doubles share: the image gateway file and how a TYPE:TAG is read.

The gateway is the file the slurm-local SPANK plugin reads (clusters/slurm-local/spank_shifter.c):
one pulled image per line, "TYPE:TAG ID BASE". $CCL_SHIFTER_GATEWAY names it; by default it is
${CCL_SLURM_LOCAL_DIR:-/tmp/ccl-harness-slurm-local}/shifter-gateway.txt. Rules and sources:
NERSC/shifter at 84b7d349, cited beside each rule.
"""
import fcntl
import hashlib
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.environ.get("CCL_DOUBLE_IMAGES") or os.path.normpath(os.path.join(HERE, "..", "images"))
GATEWAY = os.environ.get("CCL_SHIFTER_GATEWAY") or os.path.join(
    os.environ.get("CCL_SLURM_LOCAL_DIR", "/tmp/ccl-harness-slurm-local"), "shifter-gateway.txt")
BASES = {"nvcr.io/nvidia/pytorch": "nvidia-pytorch", "docker.io/vllm/vllm-openai": "vllm-openai",
         "vllm/vllm-openai": "vllm-openai", "docker.io/lmsysorg/sglang": "sglang", "lmsysorg/sglang": "sglang"}
# src/ImageData.c:62-68; defaultImageType is docker on Perlmutter (ImageData.c:577-587).
TYPES = ("docker", "custom", "id", "local")


def die(message, code=1):
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.exit(code)


def parse_descriptor(value):
    """(type, tag) as parse_ImageDescriptor reads it (src/ImageData.c:524-618)."""
    head, colon, rest = value.partition(":")
    kind, tag = ("docker", value)
    if colon and re.sub(r"[^A-Za-z0-9_:.+\-@]", "", head) in TYPES:
        kind, tag = head, rest
    allowed = r"[^A-Za-z0-9_:.+\-@/]" if kind in ("docker", "local") else r"[^A-Za-z0-9_:.+\-@]"
    tag = re.sub(allowed, "", tag)
    if not tag:
        die("FAILED to parse image descriptor. Try specifying both the type and descriptor, "
            "e.g., docker:ubuntu:latest")
    return kind, tag


def read_gateway():
    """{"TYPE:TAG": (id, base)} for every READY image."""
    out = {}
    try:
        with open(GATEWAY, encoding="utf-8") as f:
            for line in f:
                words = line.split()
                if len(words) == 3:
                    out[words[0]] = (words[1], words[2])
    except FileNotFoundError:
        pass
    return out


def pull(kind, tag):
    """Adds TYPE:TAG to the gateway as imagegw's pull would, or refuses what it cannot pull."""
    if kind != "docker":
        die("shifterimg double: only docker images can be pulled")
    # imagegw/shifter_imagegw/imageworker.py:259-264: the tag is split on ':' into repository and
    # tag; a digest's "repo@sha256" is no repository a registry serves
    # (dockerv2.py:426 GET /v2/<repo>/manifests/<tag>).
    parts = tag.split(":")
    if len(parts) != 2 and not (len(parts) == 3 and "/" in parts[1]):
        die("Unable to parse tag %s" % tag)
    if "@" in tag:
        die("Pull failed: %s: a digest cannot be pulled through the image gateway "
            "(it splits the name on ':' into repository %r and tag %r)" % (tag, tag.rsplit(":", 1)[0], tag.rsplit(":", 1)[1]))
    repo = tag.rsplit(":", 1)[0]
    base = BASES.get(repo)
    if base is None or not os.path.isdir(os.path.join(IMAGES, base)):
        die("Pull failed: %s: no such image in tests/doubles/images (known: %s)" % (tag, ", ".join(sorted(BASES))))
    image_id = hashlib.sha256(("%s:%s" % (kind, tag)).encode()).hexdigest()
    os.makedirs(os.path.dirname(GATEWAY) or ".", exist_ok=True)
    with open(GATEWAY, "a+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        if not any(line.split()[:1] == ["%s:%s" % (kind, tag)] for line in f):
            f.write("%s:%s %s %s\n" % (kind, tag, image_id, base))
    return image_id, base
