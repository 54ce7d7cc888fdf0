"""Test double of TorchTitan v0.2.2's `python -m torchtitan.train` (docs/contracts/torchtitan-v0.2.2.yaml).

Started by torchrun like the real one (RANK, WORLD_SIZE, LOCAL_RANK). It reads the job config as
ConfigManager does: the TOML named by --job.config_file, whose unknown keys raise ValueError
"Invalid field names" (manager.py:165-171), then `--section.key[=]value` options as tyro does
(hyphens or underscores, booleans as --flag / --no-flag; unknown options: "Unrecognized
options", exit 2; no prefix of an option is taken, as tyro looks flags up whole:
_tyro_backend.py:116-117,141-149 at tyro v1.0.15; -h/--help prints its help and exits 0). It
applies the start-up checks the run would hit (registry name and flavor, dataset, parallel
degrees against WORLD_SIZE, the expert mesh, global batch, profiler schedule),
logs each step like MetricsProcessor, and with profiling.enable_profiling writes each rank's
Kineto trace exactly where and for exactly the steps torch.profiler's schedule records:
<dump_folder>/<save_traces_folder>/iteration_<step_num>/rank<r>_trace.json.

Under nsys (CCL_DOUBLE_NSYS_REPORT, set by tests/doubles/tools/nsys) CUPTI already has a
subscriber: with profiling on, Kineto prints CUPTI's multiple-subscriber error and its trace
holds no GPU kernels, as the real pair does.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# In the e2e repository: tests/doubles/lib at its root (beside docs/contracts); in the checkout:
# tests/doubles/lib beside this double's directory.
for lib in (os.path.join(ROOT, "tests", "doubles", "lib"), os.path.join(ROOT, "..", "lib")):
    if os.path.isfile(os.path.join(lib, "double_common.py")):
        sys.path.insert(0, lib)
        break
import double_common as dc  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11, as manager.py:16-19
    import tomli as tomllib

CLASSES = {"job": "Job", "profiling": "Profiling", "metrics": "Metrics", "model": "Model",
           "optimizer": "Optimizer", "lr_scheduler": "LRScheduler", "training": "Training",
           "parallelism": "Parallelism", "activation_checkpoint": "ActivationCheckpoint", "comm": "Comm"}
DEFAULTS = {  # config/job_config.py at v0.2.2, for the keys the double reads
    "job.dump_folder": "./outputs", "profiling.enable_profiling": False,
    "profiling.save_traces_folder": "profile_traces", "profiling.profile_freq": 10,
    "profiling.profiler_active": 1, "profiling.profiler_warmup": 3, "metrics.log_freq": 10,
    "model.name": "llama3", "model.flavor": "debugmodel", "model.hf_assets_path": "./tests/assets/tokenizer",
    "training.dataset": "c4_test", "training.local_batch_size": 8, "training.global_batch_size": -1,
    "training.seq_len": 2048, "training.steps": 10000, "training.mixed_precision_param": "bfloat16",
    "parallelism.data_parallel_replicate_degree": 1, "parallelism.data_parallel_shard_degree": -1,
    "parallelism.tensor_parallel_degree": 1, "parallelism.pipeline_parallel_degree": 1,
    "parallelism.context_parallel_degree": 1, "parallelism.expert_parallel_degree": 1,
}
TYPES = {"str": str, "int": int, "float": (float, int), "bool": bool}


def log(message):
    print(f"[titan] {message}", flush=True)


def fail(kind, message, code=1):
    """An exception escaping main: Python prints the traceback's last line and exits 1."""
    sys.stderr.write(f"Traceback (most recent call last):\n  File \"torchtitan/train.py\"\n{kind}: {message}\n")
    sys.exit(code)


def unrecognized(args):
    sys.stderr.write("╭─ Unrecognized options ───────────────────────╮\n"
                     f"│ Unrecognized options: {' '.join(args)}\n"
                     "│ For full helptext, run torchtitan.train --help\n"
                     "╰──────────────────────────────────────────────╯\n")
    sys.exit(2)


def canonical(option):
    """--lr-scheduler.warmup-steps -> lr_scheduler.warmup_steps (tyro takes either spelling)."""
    return option[2:].replace("-", "_")


def load_toml(argv, keys):
    path = None
    for i, arg in enumerate(argv):  # manager.py:64-77
        if "=" in arg and arg.split("=", 1)[0] in ("--job.config-file", "--job.config_file"):
            path = arg.split("=", 1)[1]
            break
        if arg in ("--job.config-file", "--job.config_file") and i < len(argv) - 1:
            path = argv[i + 1]
            break
    if path is None:
        return {}
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        fail("FileNotFoundError", f"[Errno 2] No such file or directory: '{path}'")
    except tomllib.TOMLDecodeError as error:
        fail("tomllib.TOMLDecodeError", str(error))
    invalid = set(data) - set(CLASSES) - {"checkpoint", "compile", "quantize", "memory_estimation",
                                          "fault_tolerance", "experimental", "validation", "debug"}
    if invalid:  # manager.py:165-171 on JobConfig itself
        fail("ValueError", f"Invalid field names in <class 'torchtitan.config.job_config.JobConfig'> data: {invalid}.\n"
             "Please modify your .toml config file or override these fields from the command line.")
    values = {}
    for section, table in data.items():
        if not isinstance(table, dict):
            fail("ValueError", f"[{section}] is not a table")
        invalid = {key for key in table if f"{section}.{key}" not in keys}
        if invalid:
            # A real field the contract does not list is as wrong here: the harness may render
            # only what the contract has read from the source.
            fail("ValueError", f"Invalid field names in <class 'torchtitan.config.job_config.{CLASSES.get(section, section)}'> "
                 f"data: {invalid}.\nPlease modify your .toml config file or override these fields from the command line.")
        for key, value in table.items():
            option = keys[f"{section}.{key}"]
            if not isinstance(value, TYPES[option.get("type", "str")]) or (option.get("type") != "bool" and isinstance(value, bool)):
                fail("TypeError", f"{section}.{key}: expected {option.get('type')}, got {value!r}")
            values[f"{section}.{key}"] = value
    return values


def cli_names(contract):
    """{canonical option: (key it sets, option, negated)}: the contract's options, as tyro names them."""
    names = {}
    for option in contract["options"]:
        if option.get("negates"):
            names[canonical(option["name"])] = (canonical(option["negates"]), option, True)
        else:
            names[canonical(option["name"])] = (canonical(option["name"]), option, False)
    return names


def print_help(contract):
    """tyro's help for the contract's options, then exit 0.

    tyro (v1.0.15 d0f2e3fb, the newest tag; TorchTitan's pyproject.toml:25 does not pin it) stops
    at -h/--help wherever it stands, prints and exits 0 (src/tyro/_backends/_tyro_backend.py:497-521,
    the default "tyro" backend, _settings.py:82). Each field is one line in its section's box
    ("<section> options", _tyro_help_formatting.py:120), named as tyro spells it: '-' for '_' in
    every dotted part (_strings.py:34-59, use_underscores off: manager.py:56-58 passes none), a
    bool as "--x, --no-x" where the contract lists the negation (_arguments.py:270-294), a value
    with its metavar (STR, INT, FLOAT, {choices}).
    """
    def spelled(name):
        return "--" + ".".join(part.replace("_", "-") for part in name[2:].split("."))

    negated = {o["negates"]: o["name"] for o in contract["options"] if o.get("negates")}
    sections = {}
    for option in contract["options"]:
        if option.get("negates"):
            continue
        name = option["name"]
        if option.get("type") == "bool":
            line = spelled(name) + (", " + spelled(negated[name]) if name in negated else "")
        elif option.get("choices"):
            line = "%s {%s}" % (spelled(name), ",".join(str(c) for c in option["choices"]))
        else:
            line = "%s %s" % (spelled(name), option.get("type", "str").upper())
        sections.setdefault(name[2:].split(".")[0].replace("_", "-") + " options", []).append(line)

    def box(title, lines):
        width = max([len(title) + 4] + [len(line) + 2 for line in lines])
        top = "╭─ %s %s╮" % (title, "─" * (width - len(title) - 3))
        return [top] + ["│ %s │" % line.ljust(width - 2) for line in lines] + ["╰%s╯" % ("─" * width)]

    out = ["usage: train.py [-h] [OPTIONS]", ""]
    out += box("options", ["-h, --help              show this help message and exit"])
    for title, lines in sections.items():
        out += box(title, lines)
    print("\n".join(out))
    sys.exit(0)


def parse_cli(argv, names, contract):
    """tyro over the TOML values: --a.b v, --a.b=v, --a.flag, --a.no-flag; unknown -> exit 2;
    -h/--help prints the help and exits 0 even after unknown options (tyro's order, above)."""
    values, unknown, i = {}, [], 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            print_help(contract)
        name, inline = (arg.split("=", 1) + [None])[:2]
        if not arg.startswith("--") or canonical(name) not in names:
            unknown.append(arg)
            i += 1
            continue
        target, option, negated = names[canonical(name)]
        kind = option.get("type", "str")
        if kind == "bool":
            if inline is not None:  # docs/debugging.md:32: --flag=False is not accepted
                unrecognized([arg])
            values[target] = not negated
            i += 1
            continue
        if inline is None:
            if i + 1 >= len(argv):
                sys.stderr.write(f"Error parsing --{target}: missing value\n")
                sys.exit(2)
            inline = argv[i + 1]
            i += 1
        try:
            values[target] = int(inline) if kind == "int" else float(inline) if kind == "float" else inline
        except ValueError:
            sys.stderr.write(f"Error parsing --{target}: {inline!r} is not a valid {kind}\n")
            sys.exit(2)
        choices = option.get("choices")
        if choices and values[target] not in choices:
            sys.stderr.write(f"Error parsing --{target}: {inline!r} does not match any of {choices}\n")
            sys.exit(2)
        i += 1
    if unknown:
        unrecognized(unknown)
    return values


def schedule(step, wait, warmup, active):
    """torch.profiler.schedule with repeat=0, skip_first=0: NONE, WARMUP, RECORD, RECORD_AND_SAVE."""
    mod = step % (wait + warmup + active)
    if mod < wait:
        return "NONE"
    if mod < wait + warmup:
        return "WARMUP"
    return "RECORD" if mod < wait + warmup + active - 1 else "RECORD_AND_SAVE"


def main():
    contract = dc.load_contract("torchtitan", "v0.2.2")
    keys = {o["name"][2:]: o for o in contract["options"] if not o.get("cli_only")}
    argv = sys.argv[1:]
    config = dict(DEFAULTS)
    config.update(load_toml(argv, keys))
    config.update(parse_cli(argv, cli_names(contract), contract))
    rank, world, local_rank = dc.dist_rank()
    log(f"torchtitan version: 0.2.2 (rank {rank} of {world}, local rank {local_rank})")

    models = {m["name"]: m["flavors"] for m in contract["models"]}
    if config["model.name"] not in models:  # protocols/train_spec.py:87
        fail("ValueError", f"TrainSpec {config['model.name']} is not registered.")
    if config["model.flavor"] not in models[config["model.name"]]:  # train.py:138
        fail("KeyError", repr(config["model.flavor"]))
    datasets = [d["name"] for d in contract["datasets"]]
    if config["training.dataset"] not in datasets:  # text_datasets.py:59-63
        fail("ValueError", f"Dataset {config['training.dataset']} is not supported. Supported datasets are: {datasets}")
    for key in ("training.mixed_precision_param",):
        choices = keys[key]["choices"]
        if config[key] not in choices:
            fail("TypeError", f"{key} must be one of {choices}, got {config[key]!r}")

    dp_replicate = config["parallelism.data_parallel_replicate_degree"]
    dp_shard = config["parallelism.data_parallel_shard_degree"]
    tp, pp = config["parallelism.tensor_parallel_degree"], config["parallelism.pipeline_parallel_degree"]
    cp, ep = config["parallelism.context_parallel_degree"], config["parallelism.expert_parallel_degree"]
    if dp_shard < 0:  # parallel_dims.py:50
        dp_shard = world // (dp_replicate * cp * tp * pp)
    if dp_replicate * dp_shard * cp * tp * pp != world:  # parallel_dims.py:53-56
        fail("AssertionError", f"Invalid parallel dims: dp_replicate({dp_replicate}) * dp_shard({dp_shard}) * "
             f"cp({cp}) * tp({tp}) * pp({pp}) != WORLD_SIZE({world})")
    if ep > 1 and (dp_shard * cp * tp) % ep != 0:  # parallel_dims.py:138,201
        fail("AssertionError", f"Mesh 'efsdp' has unexpected size: dp_shard*cp*tp ({dp_shard * cp * tp}) is not divisible by ep ({ep})")
    local_batch, global_batch = config["training.local_batch_size"], config["training.global_batch_size"]
    if global_batch < 0:
        global_batch = local_batch * dp_replicate * dp_shard
    if global_batch % (local_batch * dp_replicate * dp_shard) != 0:  # train.py:196-208
        fail("AssertionError", f"global batch size must be multiple of local batch size times data-parallel degree "
             f"({global_batch} % ({local_batch} * {dp_replicate * dp_shard}) != 0)")

    assets = config["model.hf_assets_path"]
    if not os.path.isfile(os.path.join(assets, "tokenizer.json")) and not os.path.isfile(os.path.join(assets, "tokenizer_config.json")):
        fail("FileNotFoundError", f"No tokenizer files found in {assets}")
    if config["training.dataset"] == "c4_test" and not os.path.isdir("tests/assets/c4_test"):
        fail("FileNotFoundError", "Couldn't find a dataset script at tests/assets/c4_test (run from the TorchTitan checkout)")

    dump = config["job.dump_folder"]
    os.makedirs(os.path.join(dump, "comm_traces"), exist_ok=True)  # distributed/utils.py:353-355
    under_nsys = "CCL_DOUBLE_NSYS_REPORT" in os.environ
    profiling = config["profiling.enable_profiling"]
    freq, warmup, active = (config["profiling.profile_freq"], config["profiling.profiler_warmup"],
                            config["profiling.profiler_active"])
    wait = freq - (active + warmup)
    if profiling:
        if wait < 0:  # profiling.py:63-66
            fail("AssertionError", "profile_freq must be greater than or equal to warmup + active")
        log(f"Profiling active. Traces will be saved at {os.path.join(dump, config['profiling.save_traces_folder'])}")
        if under_nsys:
            sys.stderr.write("WARNING: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: CUPTI already has a subscriber "
                             "(another profiler, e.g. Nsight Systems, is attached): Kineto records no GPU activity\n")

    def save(step_num, steps):
        folder = os.path.join(dump, config["profiling.save_traces_folder"], f"iteration_{step_num}")
        log(f"Dumping profiler traces at step {step_num}")
        trace = dc.kineto_trace(rank, world, steps)
        if under_nsys:
            trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("cat") != "kernel"]
        dc.write_json(os.path.join(folder, f"rank{rank}_trace.json"), trace)

    step_num, recorded = 0, []
    action = schedule(0, wait, warmup, active) if profiling else "NONE"
    log(f"Training starts at step 1")
    for step in range(1, config["training.steps"] + 1):  # train.py:671-693
        if action in ("RECORD", "RECORD_AND_SAVE"):
            recorded.append(step_num)  # the trace holds ProfilerStep#<step_num> for training step step_num+1
        if step == 1 or step % config["metrics.log_freq"] == 0:
            log(f"step: {step:2}  loss: {10.0 / step:8.5f}  grad_norm: 1.0000  memory: 20.00GiB(50.00%)  "
                f"tps: 1,000  tflops: 100.00  mfu: 32.00%")
        if profiling:
            previous = action
            step_num += 1
            action = schedule(step_num, wait, warmup, active)
            if previous == "RECORD_AND_SAVE":
                save(step_num, recorded)
                recorded = []
    if profiling and action in ("RECORD", "RECORD_AND_SAVE"):
        save(step_num, recorded + [step_num])  # stop() in a recording state saves what it has
    log("Training completed")


if __name__ == "__main__":
    main()
