"""ccl_preflight.py: asks the framework in the image that will run whether it knows every option
the rendered launch passes, before anything expensive starts (model download, engine start).

A job that dies with "unrecognized arguments" after an hour in the queue has checked nothing the
harness could not: the options come from the framework's contract at its pinned ref
(docs/contracts/), but where that ref could not be read, or the image holds another version, only
the image can tell. The launch script runs, in the container its job uses:

    python3 ccl_preflight.py --framework NAME [--dist DIST]... [--module MOD] [--cuda MAJOR]
        [--contract TEXT] [--toml FILE] [--config-keys FILE] --help-command "COMMAND..." -- ARGS...
    python3 ccl_preflight.py --from-script RENDERED/launch.sbatch

The second form finds the script's own preflight call and runs it with what the script would pass
(the harness does so in the built image before it submits, and in run --dry-run).

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
framework could not be asked (its help failed), which is also a reason to stop; 5 (--from-script
only): nothing that can be checked outside the job. Only the Python
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


# ---- Reading a rendered launch script (--from-script): enough of bash to know what each
# argument array holds when a command runs. tests/e2e/platform_rules.py reads scripts with it too.
ARRAY_USE = re.compile(r'"\$\{([A-Za-z_][A-Za-z0-9_]*)\[@\]\}"')
ARRAY_SET = re.compile(r"^\s*(?:local\s+)?([A-Za-z_][A-Za-z0-9_]*)(\+?)=\(", re.MULTILINE)


def logical_lines(text):
    """The script's commands: comments dropped, backslash continuations joined."""
    lines, current = [], ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.lstrip().startswith("#") and not current:
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        lines.append(current + line)
        current = ""
    if current:
        lines.append(current)
    return lines


def events(text):
    """The script in order, as ("set", NAME, WORDS, APPEND), ("call", NAME) and ("run", LINE),
    with functions' bodies kept as ("def", NAME, EVENTS). Enough of bash to know what each
    array holds at each command: NAME=( ... ), NAME+=( ... ), add_args, functions that set arrays."""
    lines = text.splitlines()
    out, at = [], 0
    while at < len(lines):
        line = lines[at]
        func = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\(\)\s*\{\s*(#.*)?$", line)
        if func:
            end = at + 1
            while end < len(lines) and lines[end] != "}":
                end += 1
            out.append(("def", func.group(1), events("\n".join(lines[at + 1:end]))))
            at = end + 1
            continue
        assign = ARRAY_SET.match(line)
        if assign:
            body, depth, end = line[assign.end():], 1, at
            chunk = body
            while True:
                for ch in chunk:
                    depth += {"(": 1, ")": -1}.get(ch, 0)
                if depth <= 0 or end + 1 >= len(lines):
                    break
                end += 1
                chunk = lines[end]
                body += "\n" + chunk
            words = " ".join(l.split("#")[0] if l.strip().startswith("#") else l for l in body.splitlines())
            words = words[:words.rfind(")")] if ")" in words else words
            out.append(("set", assign.group(1), words, assign.group(2) == "+"))
            at = end + 1
            continue
        out.append(("line", line))
        at += 1
    merged, current = [], ""
    for event in out:
        if event[0] != "line":
            merged.append(event)
            continue
        line = event[1].rstrip()
        if line.lstrip().startswith("#") and not current:
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        merged.append(("run", current + line))
        current = ""
    return merged


def simulate(text):
    """Each command line with every "${NAME[@]}" replaced by what NAME holds when it runs."""
    state, funcs, commands = {}, {}, []

    def apply(evs):
        for event in evs:
            if event[0] == "def":
                funcs[event[1]] = event[2]
            elif event[0] == "set":
                state[event[1]] = (state.get(event[1], "") + " " if event[3] else "") + event[2]
            else:
                line = event[1]
                word = line.split()[0] if line.split() else ""
                if word == "add_args":
                    state["args"] = state.get("args", "") + " " + line.split(None, 1)[1]
                elif word in funcs:
                    apply(funcs[word])
                else:
                    commands.append(expand(line, state))

    apply(events(text))
    return commands


def expand(line, table, depth=0):
    """The line with every "${NAME[@]}" replaced by what NAME holds."""
    if depth > 4:
        return line
    return ARRAY_USE.sub(lambda m: " " + expand(table.get(m.group(1), ""), table, depth + 1) + " ", line)


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


def look_up(flag, known, known_normal, exact, notes):
    """'' when `flag` is an option of the parser, else why not; what was allowed goes to `notes`."""
    if flag in known:
        return ""
    if normal(flag) in known_normal:
        notes.setdefault("spelled", []).append(flag)
        return ""
    if "." in flag:
        group = flag.split(".", 1)[0]
        if group in known or normal(group) in known_normal:
            notes.setdefault("fields", []).append("%s (a field of %s, whose keys the help does not list)" % (flag, group))
            return ""
    prefixed = sorted(k for k in known if normal(k).startswith(normal(flag)))
    if len(prefixed) == 1 and exact:
        return "%s is not an option; %s is, and this parser takes no abbreviation" % (flag, prefixed[0])
    if len(prefixed) == 1:
        notes.setdefault("abbreviations", []).append("%s for %s" % (flag, prefixed[0]))
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


def from_script(path):
    """The options the launch script at `path` gives its own preflight call, found by reading it:
    how the harness runs the same check before submitting (run, run --dry-run) in the built image.
    Exits 5 when the check needs what only the job has (a help command naming the job's paths)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    here = os.path.dirname(os.path.abspath(path))
    call = next((c for c in simulate(text) if re.search(r"python3\s+\S*ccl_preflight\.py", c)), None)
    if call is None:
        say("%s runs no preflight" % path)
        sys.exit(5)
    call = call[call.index("ccl_preflight.py") + len("ccl_preflight.py"):].lstrip('"')
    call = re.split(r"\s\|\|\s", call)[0]
    for name in ("RUN_DIR", "here"):
        call = call.replace("${%s}" % name, here).replace("$%s" % name, here)
    words = shlex.split(call)
    if "--help-command" in words:
        command = words[words.index("--help-command") + 1]
        if "$" in command:
            say("the help command (%s) needs the job's own environment: checked by the job" % command)
            sys.exit(5)
    return words


def main(argv=None):
    parser = argparse.ArgumentParser(prog="ccl_preflight.py", allow_abbrev=False)
    parser.add_argument("--from-script")
    parser.add_argument("--framework")
    parser.add_argument("--dist", action="append", default=[])
    parser.add_argument("--module")
    parser.add_argument("--cuda")
    parser.add_argument("--contract", default="")
    parser.add_argument("--toml")
    parser.add_argument("--config-keys")
    parser.add_argument("--help-command")
    parser.add_argument("--exact", action="store_true",
                        help="the parser takes no abbreviation (argparse allow_abbrev=False, tyro)")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args(argv)
    if opts.from_script:
        return main(from_script(opts.from_script))
    if not opts.framework:
        parser.error("--framework or --from-script is required")
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
        notes = {}
        for flag in flags:
            problem = look_up(flag, known, known_normal, opts.exact, notes)
            if problem:
                problems.append(problem)
        if notes.get("spelled"):
            say("%d option(s) written with '_' where the help has '-' (the parser takes either)" % len(notes["spelled"]))
        for kind in ("abbreviations", "fields"):
            for note in notes.get(kind, []):
                say("allowed: %s" % note)
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
