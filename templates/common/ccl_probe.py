"""ccl_probe.py: what this host ran with, for the run's provenance record.

The rendered launch script runs it once per rank, with the workload's own Python, before the
workload starts: python3 ccl_probe.py RUN_DIR. It writes RUN_DIR/probe/<hostname>-<rank>.json: the host name, the rank,
the versions of Python, PyTorch, NCCL, the CUDA driver, JAX and libtpu (null when absent), the
variables the capture rules allow (with their values) and the names, never the values, of the
secret-named ones. The raw environment is never written: a harness killed before it reads and
deletes these files leaves nothing secret behind.

Standard library only. It never fails the run: any error is reported on stderr and it exits 0.
"""

import json
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile

try:
    from importlib import metadata
except ImportError:  # Python < 3.8
    metadata = None


def distribution_version(*names):
    """The installed version of the first distribution found, without importing it."""
    if metadata is None:
        return None
    for name in names:
        try:
            return metadata.version(name)
        except Exception:  # PackageNotFoundError, or a broken installation
            continue
    return None


def nccl_version_string(version):
    """torch.cuda.nccl.version() is a tuple in recent PyTorch, an int code in older ones."""
    if isinstance(version, (tuple, list)):
        return ".".join(str(part) for part in version)
    if isinstance(version, int):
        if version >= 10000:  # NCCL >= 2.9: major*10000 + minor*100 + patch
            return "%d.%d.%d" % (version // 10000, version % 10000 // 100, version % 100)
        return "%d.%d.%d" % (version // 1000, version % 1000 // 100, version % 100)
    return str(version)


def torch_versions():
    """(torch, nccl): NCCL only when CUDA is usable. Importing torch may fail in odd ways."""
    try:
        import torch
    except Exception:
        return distribution_version("torch"), None
    nccl = None
    try:
        if torch.cuda.is_available():
            nccl = nccl_version_string(torch.cuda.nccl.version())
    except Exception:
        nccl = None
    return str(torch.__version__), nccl


def cuda_driver_version():
    try:
        result = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=10,
            check=False,
        )
    except Exception:  # not installed, or it hung
        return None
    lines = result.stdout.decode("utf-8", "replace").split()
    return lines[0] if result.returncode == 0 and lines else None


def printable(value):
    """Bytes that are not UTF-8 arrive as lone surrogates, which no JSON reader accepts."""
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# The capture rules, written into the rendered copy by ccl-harness from its own table
# (harness/env_capture.cpp, their one owner); this template's copy captures nothing.
CAPTURED_PREFIXES = ()
SECRET_WORDS = ()


def is_secret_name(name):
    lower = name.lower()
    return any(word in lower for word in SECRET_WORDS)


def captured_environment(environ):
    """(allow-listed variables with their values, names of the secret-named ones)."""
    captured = {}
    secrets = []
    for name, value in environ.items():
        if is_secret_name(name):
            secrets.append(name)
        elif name.startswith(CAPTURED_PREFIXES):
            captured[name] = printable(value)
    return captured, sorted(secrets)


def rank():
    for name in ("RANK", "SLURM_PROCID", "TPU_WORKER_ID"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def main():
    run_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    hostname = socket.gethostname()
    torch, nccl = torch_versions()
    environment, secret_names = captured_environment(os.environ)
    report = {
        "format": 1,
        "hostname": hostname,
        "rank": rank(),
        "tools": {
            "python": platform.python_version(),
            "torch": torch,
            "nccl": nccl,
            "cuda_driver": cuda_driver_version(),
            "jax": distribution_version("jax"),
            "libtpu": distribution_version("libtpu", "libtpu-nightly"),
        },
        "environment": environment,
        "secret_names": secret_names,
    }
    probe_dir = os.path.join(run_dir, "probe")
    os.makedirs(probe_dir, mode=0o700, exist_ok=True)
    safe_host = re.sub(r"[^A-Za-z0-9._-]", "_", hostname) or "host"
    target = os.path.join(probe_dir, "%s-%d.json" % (safe_host, report["rank"]))
    # Written whole, then renamed: the harness never reads half a report.
    fd, temp = tempfile.mkstemp(dir=probe_dir, prefix=".probe-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(report, out, sort_keys=True)
        os.replace(temp, target)
    except BaseException:
        os.unlink(temp)
        raise


if __name__ == "__main__":
    # `ccl_probe.py RUN_DIR -- COMMAND...` probes, then becomes the workload: one srun step per
    # task instead of two, so that a probe step never has to start while the controller is busy.
    command = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    if command:
        sys.argv = sys.argv[:sys.argv.index("--")]
    try:
        main()
    except Exception as error:  # provenance is best effort; the workload must still run
        print("ccl_probe: %s" % error, file=sys.stderr)
    if command:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execvp(command[0], command)
    sys.exit(0)
