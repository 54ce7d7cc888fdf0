"""Shared pieces of the framework doubles (tests/doubles/<framework>/).

A double stands in for a real framework on the test cluster. It accepts exactly the options its
contract (docs/contracts/<framework>-<ref>.yaml) lists, refusing anything else the way the real
parser does, and writes traces under the real names, in the real places, for the real window.
The traces are small but valid Kineto JSON: ProfilerStep#N markers, one compute and one NCCL
kernel per step, distributedInfo with the rank.
"""
import argparse
import gzip
import json
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CONTRACTS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "docs", "contracts"))


def load_contract(framework, ref):
    """The contract of `framework` at `ref`; exits 3 (a broken test set-up) when absent."""
    path = os.path.join(CONTRACTS, f"{framework}-{ref}.yaml")
    if not os.path.isfile(path):
        sys.stderr.write(f"double: no contract {path}\n")
        sys.exit(3)
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def allow_abbrev(contract):
    """Whether the real parser takes a unique prefix of a long option (the contract's `allow_abbrev`).

    argparse's default is True (CPython Lib/argparse.py ArgumentParser.__init__, 3.11.2:1754);
    each contract says what its framework's parser sets, with the line. Exits 3 (a broken test
    set-up) when the contract does not say: guessing would accept or refuse the wrong spellings.
    """
    value = contract.get("allow_abbrev")
    if not isinstance(value, bool):
        sys.stderr.write(f"double: the contract of {contract.get('framework')} has no allow_abbrev: true|false\n")
        sys.exit(3)
    return value


def argparse_parser(contract, prog, parser_class=argparse.ArgumentParser, options=None, group_of=None, **kwargs):
    """The real parser's shape for the contract's options: Python's own argparse does the parsing.

    Each option keeps its name as dest and stays absent when not given (default SUPPRESS), so
    callers see only what the command line set. A flag (takes 0) is store_true; '+'/'*' are
    nargs; choices are argparse's. Help is argparse's -h/--help: every option string, one per
    line, exit 0, as the real parsers print it. group_of(name) names the argument group an
    option sits in (None: the parser's own "options").
    """
    parser = parser_class(prog=prog, allow_abbrev=allow_abbrev(contract), **kwargs)
    groups = {}
    for option in contract.get("options", []) if options is None else options:
        name, takes = option["name"], option.get("takes", 1)
        spec = {"dest": name, "default": argparse.SUPPRESS}
        if takes == 0:
            spec["action"] = "store_true"
        else:
            if takes in ("+", "*"):
                spec["nargs"] = takes
            if option.get("choices"):
                spec["choices"] = [str(c) for c in option["choices"]]
            else:
                # argparse's own metavar for --a-b: A_B (dest here is the option string).
                spec["metavar"] = name.lstrip("-").replace("-", "_").upper()
        title = group_of(name) if group_of else None
        target = parser if title is None else groups.setdefault(title, parser.add_argument_group(title))
        target.add_argument(name, **spec)
    return parser


def note_abbreviations(argv, parser):
    """Says on stderr which prefixes argparse expanded: the contract lists only some of the real
    parser's options, so a prefix unique here may be ambiguous there (and refused)."""
    if not parser.allow_abbrev:
        return
    known = [o for o in parser._option_string_actions if o.startswith("--")]
    for arg in argv:
        if arg == "--":
            break
        name = arg.split("=", 1)[0]
        if name.startswith("--") and len(name) > 2 and name not in known:
            matches = [o for o in known if o.startswith(name)]
            if len(matches) == 1:
                sys.stderr.write(f"double: {name} taken as {matches[0]} (argparse's allow_abbrev); the real parser "
                                 "has options the contract does not list, so it may be ambiguous there\n")


def parse_argparse(argv, contract, prog, **kwargs):
    """Parses argv as the real argparse parser does, for the contract's options.

    allow_abbrev comes from the contract: True takes a unique prefix of a long option and refuses
    an ambiguous one ("ambiguous option: --x could match --xa, --xb", exit 2); False refuses
    both as unrecognized. Unknown options exit 2 ("unrecognized arguments"), -h/--help prints
    every option and exits 0. Returns {name: value, list or True} for the options given; values
    stay strings, and a repeated option keeps the last value, as argparse does.
    """
    parser = argparse_parser(contract, prog, **kwargs)
    note_abbreviations(argv, parser)
    return vars(parser.parse_args(argv))


# `vllm bench latency` (vLLM's FlexibleArgumentParser), read at two stored versions of
# vllm/utils/argparse_utils.py that bracket v0.19.0 (2026-04): c836a6feca55 (before v0.13) and
# 00da11e37d1f (after 2026-08); lines below are c836a6feca55's, and both agree on each rule.
# vllm/entrypoints/cli/benchmark/main.py (030ea52effcb): usage=f"vllm {self.name} {cmd_cls.name} [options]"
VLLM_BENCH_USAGE = "vllm bench latency [options]"
# The top parser reports what the subcommand left over (argparse: the parse_args of the parser
# that was called, `vllm`'s); its subcommand list is unverified at v0.19.0.
VLLM_TOP_USAGE = "vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ..."
VLLM_EPILOG = ("For full list:            vllm bench latency --help=all\n"
               "For a section:            vllm bench latency --help=ModelConfig    (case-insensitive)\n"
               "For a flag:               vllm bench latency --help=max-model-len  (_ or - accepted)\n"
               "Documentation:            https://docs.vllm.ai\n")  # VLLM_SUBCMD_PARSER_EPILOG
# EngineArgs.add_cli_args puts each config's fields in an argument group titled after the class
# (vllm/engine/arg_utils.py at 99d7eb5d6a51: model_group "ModelConfig", parallel_group
# "ParallelConfig", cache_group "CacheConfig", vllm_group "VllmConfig" with --profiler-config in
# later stored versions); latency.py's own options stay in argparse's "options" group.
VLLM_GROUPS = {
    "--model": "ModelConfig", "--dtype": "ModelConfig", "--trust-remote-code": "ModelConfig",
    "--max-model-len": "ModelConfig", "--enforce-eager": "ModelConfig",
    "--tensor-parallel-size": "ParallelConfig", "--pipeline-parallel-size": "ParallelConfig",
    "--data-parallel-size": "ParallelConfig", "--enable-expert-parallel": "ParallelConfig",
    "--distributed-executor-backend": "ParallelConfig",
    "--gpu-memory-utilization": "CacheConfig",
}


class _SortedHelp(argparse.RawDescriptionHelpFormatter):
    """SortedHelpFormatter (argparse_utils.py:28-46): options sorted by their option strings, text
    kept as written (it also adds argparse's "(default: ...)", which options without help lack)."""

    def add_arguments(self, actions):
        super().add_arguments(sorted(actions, key=lambda action: action.option_strings))


class VllmBenchParser(argparse.ArgumentParser):
    """The help of a bottom-level FlexibleArgumentParser (argparse_utils.py:105-177).

    Plain --help lists the config groups, not the options (155-177); --help=all is argparse's
    full help (117-119); --help=<group title> that group's options (121-129); any other keyword
    the options whose strings contain it (131-145), else a line saying nothing matched (147-153).
    """

    search_keyword = None
    # _json_tip (argparse_utils.py:53-61), in other words: what --help=all and a group's help end with.
    json_tip = ("A JSON option can be given whole or one key at a time: --X '{\"a\": 1, \"b\": {\"c\": 2}}' "
                "is --X.a 1 --X.b.c 2,\nand a list key can be extended with +: --X.k+ v1 --X.k+=v2,v3\n")

    def format_help(self):
        keyword = self.search_keyword
        groups = [g for g in self._action_groups if g._group_actions]
        if keyword is None:
            formatter = self._get_formatter()
            formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
            formatter.add_text(self.description)
            formatter.start_section("Config Groups")
            formatter.add_text("".join(f"{g.title: <24}{g.description or ''}\n" for g in groups))
            formatter.end_section()
            formatter.add_text(self.epilog)
            return formatter.format_help()
        keyword = keyword.lower().replace("_", "-")
        if keyword == "all":
            self.epilog = self.json_tip
            return super().format_help()
        formatter = self._get_formatter()
        for group in groups:
            if group.title.lower() == keyword:
                formatter.start_section(group.title)
                formatter.add_text(group.description)
                formatter.add_arguments(group._group_actions)
                formatter.end_section()
                formatter.add_text(self.json_tip)
                return formatter.format_help()
        matched = [a for g in groups for a in g._group_actions if any(keyword in o.lower() for o in a.option_strings)]
        if matched:
            formatter.start_section(f"Arguments matching '{keyword}'")
            formatter.add_arguments(matched)
            formatter.end_section()
            formatter.add_text(self.json_tip)
        else:
            formatter.add_text(f"No group or arguments matching '{keyword}'.\n"
                               "Use '--help' to see available groups or '--help=all' to see all available parameters.")
        return formatter.format_help()


def _vllm_spelling(argv):
    """FlexibleArgumentParser.parse_args's rewriting before argparse sees argv.

    --help=KEYWORD becomes --help with the keyword kept for the help (argparse_utils.py:236-238);
    in `--name...` the part before the first '.' takes '-' for '_' (226-246); each `--a.b VALUE`
    or `--a.b=VALUE` is folded into one `--a JSON` appended at the end, VALUE read as JSON where
    it is JSON, `--a.b+ x,y` a list (315-348). Returns (keyword, argv).
    """
    keyword, spelled = None, []
    for arg in argv:
        if arg.startswith("--help="):
            keyword = arg.split("=", 1)[1].lower()
            spelled.append("--help")
        elif arg.startswith("--"):
            key, eq, value = arg.partition("=")
            head, dot, tail = key[2:].partition(".")
            spelled.append("--" + head.replace("_", "-") + dot + tail + eq + value)
        else:
            spelled.append(arg)
    folded, nested, i = [], {}, 0
    while i < len(spelled):
        arg = spelled[i]
        key, eq, value = arg.partition("=")
        i += 1
        if not arg.startswith("-") or "." not in key:
            folded.append(arg)
            continue
        if not eq:
            if i >= len(spelled):  # processed_args[i + 1] past the end (322)
                sys.stderr.write("Traceback (most recent call last):\n  File \"vllm/utils/argparse_utils.py\"\n"
                                 "IndexError: list index out of range\n")
                sys.exit(1)
            value = spelled[i]
            i += 1
        if key.endswith("+"):
            key, value = key[:-1], json.dumps(value.split(","))
        base, *fields = key.split(".")
        try:
            value = json.loads(value)
        except ValueError:
            pass
        table = nested.setdefault(base, {})
        for field in fields[:-1]:
            if not isinstance(table.get(field), dict):
                table[field] = {}
            table = table[field]
        if isinstance(value, list) and isinstance(table.get(fields[-1]), list):
            table[fields[-1]] += value
        else:
            table[fields[-1]] = value
    for base, table in nested.items():
        folded += [base, json.dumps(table)]
    return keyword, folded


def parse_vllm_bench(argv, contract, prog="vllm bench latency"):
    """`vllm bench latency ARGV` as vLLM parses it: FlexibleArgumentParser's spelling, then argparse.

    allow_abbrev comes from the contract (FlexibleArgumentParser leaves argparse's default).
    Errors inside the bench's own parser (ambiguous, missing value, invalid choice) are its, with
    its usage; options it does not know are reported by the top `vllm` parser. The contract's
    `--group.field` options come back under their dotted names, JSON values as strings; a field
    the contract does not list is refused as parse_dataclass refuses a field its config lacks
    (vllm/engine/arg_utils.py get_kwargs: ArgumentTypeError, exit 2; which fields ProfilerConfig
    forbids is unverified, the contract lists what the harness passes).
    """
    keyword, argv = _vllm_spelling(argv)
    options = [o for o in contract.get("options", []) if "." not in o["name"]]
    dotted = {}
    for option in contract.get("options", []):
        if "." in option["name"]:
            base, field = option["name"].split(".", 1)
            dotted.setdefault(base, set()).add(field)
    options += [{"name": base, "takes": 1} for base in dotted]
    parser = argparse_parser(contract, prog, parser_class=VllmBenchParser, options=options,
                             group_of=lambda name: VLLM_GROUPS.get(name, "VllmConfig" if name in dotted else None),
                             usage=VLLM_BENCH_USAGE, description="Benchmark the latency of a single batch of requests.",
                             epilog=VLLM_EPILOG, formatter_class=_SortedHelp)
    parser.search_keyword = keyword
    note_abbreviations(argv, parser)
    namespace, extras = parser.parse_known_args(argv)
    if extras:
        argparse.ArgumentParser(prog="vllm", usage=VLLM_TOP_USAGE).error("unrecognized arguments: " + " ".join(extras))
    values = vars(namespace)
    for base, fields in dotted.items():
        if base not in values:
            continue
        try:
            table = json.loads(values.pop(base))
        except ValueError as error:
            parser.error(f"argument {base}: {error}")
        if not isinstance(table, dict):
            parser.error(f"argument {base}: expected a JSON object, got {table!r}")
        for field, value in table.items():
            if field not in fields:
                parser.error(f"argument {base}: {field}: Extra inputs are not permitted "
                             "(a field the contract does not list)")
            values[f"{base}.{field}"] = value if isinstance(value, str) else json.dumps(value)
    return values


def usage_error(prog, message):
    sys.stderr.write(f"usage: {prog} [options]\n{prog}: error: {message}\n")
    sys.exit(2)


def dist_rank():
    """(rank, world_size, local_rank) from torchrun's environment, else Slurm's, else 0/1/0."""
    env = os.environ
    for rank_key, world_key, local_key in (("RANK", "WORLD_SIZE", "LOCAL_RANK"),
                                           ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")):
        if rank_key in env:
            return int(env[rank_key]), int(env.get(world_key, "1")), int(env.get(local_key, "0"))
    return 0, 1, 0


def kineto_trace(rank, world_size, steps, backend="nccl", step_us=1000):
    """A small Kineto trace (dict) with one ProfilerStep#N per step in `steps`."""
    events = [
        {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": f"GPU {rank % 4}"}},
        {"name": "process_name", "ph": "M", "pid": 100 + rank, "tid": 0, "args": {"name": "python3"}},
    ]
    ts = 1_000_000
    for step in steps:
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}",
                       "pid": 100 + rank, "tid": 1, "ts": ts, "dur": step_us})
        events.append({"ph": "X", "cat": "kernel", "name": "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn",
                       "pid": 0, "tid": 7, "ts": ts + 50, "dur": step_us // 2, "args": {"stream": 7}})
        # The host side of the collective as PyTorch's profiler records it: record_param_comms with
        # its arguments, spelled as in HTA's published NCCL trace (tests/fixtures/real_traces/
        # hta_nccl_cut, NCCL 2.17.1), the arguments the collective-volume metric reads.
        events.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 100 + rank, "tid": 1,
                       "ts": ts + 290, "dur": 5,
                       "args": {"Process Group Name": "0", "Process Group Description": "default_pg",
                                "Group size": world_size, "Global rank start": 0, "Global rank stride": 1,
                                "Process Group Ranks": str(list(range(world_size))), "In msg nelems": 1048576,
                                "Out msg nelems": 1048576, "In split size": "[]", "Out split size": "[]",
                                "dtype": "BFloat16", "Collective name": "allreduce"}})
        events.append({"ph": "X", "cat": "kernel",
                       "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                       "pid": 0, "tid": 20, "ts": ts + 300, "dur": step_us // 4, "args": {"stream": 20}})
        ts += step_us + 10
    return {
        "schemaVersion": 1,
        "distributedInfo": {"backend": backend, "rank": rank, "world_size": world_size},
        "traceEvents": events,
    }


def write_json(path, document, compress=False):
    """Writes `document` to `path` (gzip when `compress`), creating the directory, atomically."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    data = json.dumps(document).encode()
    with (gzip.open(tmp, "wb") if compress else open(tmp, "wb")) as f:
        f.write(data)
    os.replace(tmp, path)
