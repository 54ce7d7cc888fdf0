"""ccl_preflight.py: asks the framework in the image that will run whether it knows every option
the rendered launch passes, before anything expensive starts (model download, engine start).

A job that dies with "unrecognized arguments" after an hour in the queue has checked nothing the
harness could not: the options come from the framework's contract at its pinned ref
(docs/contracts/), but where that ref could not be read, or the image holds another version, only
the image can tell. The launch script runs, in the container its job uses:

    python3 ccl_preflight.py --framework NAME [--dist DIST]... [--module MOD] [--cuda MAJOR]
        [--contract TEXT] [--toml FILE] [--config-keys FILE] --help-command "COMMAND..." -- ARGS...

ARGS are exactly the arguments the launch passes (its argument array, every pass's options).
Every `--flag` among them is looked up in `COMMAND --help` (and `--help=all` where the help
offers it, as vLLM's does); with --toml, every `[section] key` of the TOML file the launch passes
is looked up as `--section.key` (TorchTitan's tyro parser); with --config-keys, every `key=value`
among ARGS is looked up among the top-level keys of that YAML file (MaxText's base.yml, whose
pyconfig refuses any other key). With --cuda, the CUDA major the image reports ($CUDA_VERSION,
set by NVIDIA's images, else torch.version.cuda) must be MAJOR: the site's NCCL plugin the job
injects is built for one CUDA major.

Exit 0: every option was found (abbreviations and nested `--group.key` forms are allowed and
said); 3: an option or the CUDA major does not match, each named with the version found; 4: the
framework could not be asked (its help failed), which is also a reason to stop. Only the Python
standard library: it runs in whatever image the card names.
"""
import argparse
import importlib
import os
import re
import shlex
import subprocess
import sys

OPTION = re.compile(r"(?<![\w-])(--[A-Za-z0-9][\w.\-]*)")
TOP_LEVEL_KEY = re.compile(r"^([A-Za-z_][\w]*)\s*:", re.MULTILINE)
ASSIGNMENT = re.compile(r"^([A-Za-z_][\w]*)=")


def say(message):
    print("preflight: %s" % message, flush=True)


def fail(code, message):
    print("preflight: error: %s" % message, file=sys.stderr, flush=True)
    sys.exit(code)


def version_of(dists, module):
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8
        metadata = None
    for dist in dists:
        if metadata is None:
            break
        try:
            return "%s %s" % (dist, metadata.version(dist))
        except Exception:  # noqa: BLE001 - any failure means "not this distribution"
            continue
    if module:
        try:
            found = getattr(importlib.import_module(module), "__version__", None)
            if found:
                return "%s %s" % (module, found)
        except Exception:  # noqa: BLE001 - an import error is reported as an unknown version
            pass
    return "version unknown"


def ask_help(command):
    """The option strings COMMAND's help lists, and the text it printed."""
    texts = []
    for extra in (["--help"], ["--help=all"]):
        if extra == ["--help=all"] and "--help=all" not in texts[0]:
            break
        try:
            done = subprocess.run(command + extra, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            fail(4, "cannot ask %s for its options: %s" % (" ".join(command + extra), error))
        text = done.stdout.decode("utf-8", "replace")
        if done.returncode != 0:
            tail = "\n".join(text.strip().splitlines()[-5:])
            fail(4, "cannot ask %s for its options: exit %d:\n%s" % (" ".join(command + extra), done.returncode, tail))
        texts.append(text)
    return set(OPTION.findall("\n".join(texts)))


def normal(flag):
    return flag.replace("_", "-")


def look_up(flag, known, known_normal):
    """'' when `flag` is an option of the parser, else why not; notes go to stdout."""
    if flag in known:
        return ""
    if normal(flag) in known_normal:
        say("%s is spelled %s in the help (the parser takes either)" % (flag, known_normal[normal(flag)]))
        return ""
    if "." in flag:
        group = flag.split(".", 1)[0]
        if group in known or normal(group) in known_normal:
            say("%s: a field of %s (its keys are not listed by the help; not checked further)" % (flag, group))
            return ""
    prefixed = sorted(k for k in known if normal(k).startswith(normal(flag)))
    if len(prefixed) == 1:
        say("%s abbreviates %s (argparse takes a unique prefix)" % (flag, prefixed[0]))
        return ""
    if len(prefixed) > 1:
        return "%s is ambiguous: it could be %s" % (flag, ", ".join(prefixed))
    close = sorted(k for k in known if normal(k).split("-")[-1] == normal(flag).split("-")[-1] and k != flag)[:3]
    return "%s is not an option%s" % (flag, " (options ending alike: %s)" % ", ".join(close) if close else "")


def flags_of(args):
    flags = []
    for arg in args:
        if arg.startswith("--") and len(arg) > 2:
            flag = arg.split("=", 1)[0]
            if flag not in flags:
                flags.append(flag)
    return flags


def toml_flags(path):
    """`--section.key` for every key of the TOML file (tables nested with dots)."""
    try:
        import tomllib as toml_reader
    except ImportError:
        try:
            import tomli as toml_reader
        except ImportError:
            say("no TOML reader in this Python (3.11's tomllib or tomli): %s not checked" % path)
            return []
    with open(path, "rb") as f:
        document = toml_reader.load(f)
    flags = []

    def walk(table, prefix):
        for key, value in table.items():
            if isinstance(value, dict):
                walk(value, prefix + key + ".")
            else:
                flags.append("--" + prefix + key)

    walk(document, "")
    return flags


def check_cuda(expected):
    found, source = os.environ.get("CUDA_VERSION", ""), "CUDA_VERSION"
    if not found:
        try:
            import torch  # noqa: PLC0415 - only when the image does not say
            found, source = torch.version.cuda or "", "torch.version.cuda"
        except Exception:  # noqa: BLE001
            found = ""
    if not found:
        say("the image does not say its CUDA version (no CUDA_VERSION, no CUDA torch): plugin for CUDA %s not checked"
            % expected)
        return ""
    major = found.split(".")[0]
    if major != str(expected):
        return ("the image is built on CUDA %s (%s) but the job injects the site's NCCL plugin for CUDA %s: NCCL "
                "would fail at its first collective; set launch.container.cuda to the image's version"
                % (found, source, expected))
    say("the image's CUDA %s (%s) matches the NCCL plugin the job injects" % (found, source))
    return ""


def main():
    parser = argparse.ArgumentParser(prog="ccl_preflight.py", allow_abbrev=False)
    parser.add_argument("--framework", required=True)
    parser.add_argument("--dist", action="append", default=[])
    parser.add_argument("--module")
    parser.add_argument("--cuda")
    parser.add_argument("--contract", default="")
    parser.add_argument("--toml")
    parser.add_argument("--config-keys")
    parser.add_argument("--help-command")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    args = opts.args[1:] if opts.args[:1] == ["--"] else opts.args
    version = version_of(opts.dist, opts.module)
    problems = []
    checked = 0
    asked = "nothing"
    if opts.help_command:
        command = shlex.split(opts.help_command)
        known = ask_help(command)
        known_normal = {normal(k): k for k in known}
        flags = flags_of(args) + (toml_flags(opts.toml) if opts.toml else [])
        for flag in flags:
            problem = look_up(flag, known, known_normal)
            if problem:
                problems.append(problem)
        checked += len(flags)
        asked = "%s --help" % opts.help_command
    if opts.config_keys:
        with open(opts.config_keys, encoding="utf-8") as f:
            keys = set(TOP_LEVEL_KEY.findall(f.read()))
        for arg in args:
            match = ASSIGNMENT.match(arg)
            if match:
                checked += 1
                if match.group(1) not in keys:
                    problems.append("%s is not a key of %s" % (match.group(1), opts.config_keys))
        asked = opts.config_keys if asked == "nothing" else asked + " and " + opts.config_keys
    if opts.cuda:
        problem = check_cuda(opts.cuda)
        if problem:
            problems.append(problem)
    contract = " The harness's contract: %s." % opts.contract if opts.contract else ""
    if problems:
        fail(3, "%s (%s) refuses what the rendered launch passes, checked against %s in the image that would "
                "run; stopping before the run starts:\n  %s\n%s" % (opts.framework, version, asked, "\n  ".join(problems),
                                                                    contract.strip()))
    say("%s (%s): %d options and keys found in %s" % (opts.framework, version, checked, asked))


if __name__ == "__main__":
    main()
