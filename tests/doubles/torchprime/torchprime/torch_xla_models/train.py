"""torchprime's torch_xla_models/train.py at ea8f14b6, as a test double (tests/doubles/torchprime/README.md).

Reads the command line the way Hydra 1.3.0 composes torchprime's configs/default.yaml
(docs/contracts/torchxla-ea8f14b64a1f14bcb5b6603dd3d41911d414c5f7.yaml cites each rule), checks
what train.py and the trainer assert, and writes this host's XPlane for the profiled steps where
torch_xla's profiler would.
"""
import json
import os
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The shared double library as the suite copies it into the checkout (the docker double also puts
# the source tree's on PYTHONPATH).
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "doubles", "lib"))
import double_common as dc  # noqa: E402
import xspace  # noqa: E402

CONTRACT = dc.load_contract("torchxla", "ea8f14b64a1f14bcb5b6603dd3d41911d414c5f7")
GROUPS = {o["name"] for o in CONTRACT["options"] if o.get("group")}
KEYS = {o["name"] for o in CONTRACT["options"] if not o.get("group")}
# The composed config's values the double reads, with torchprime's defaults
# (configs/default.yaml:14-42, configs/task/train.yaml:3-4, configs/dataset/wikitext.yaml:5).
DEFAULTS = {"torch_dtype": "bfloat16", "profile_start_step": "3", "profile_end_step": "null", "profile_dir": "profile",
            "output_dir": "outputs", "run_name": "null", "task.global_batch_size": "4", "task.max_steps": "15",
            "dataset.block_size": "8192", "ici_mesh.data": "1", "ici_mesh.fsdp": "4", "ici_mesh.tensor": "1",
            "ici_mesh.expert": "1", "ici_mesh.context": "1"}
MESH = ("ici_mesh.data", "ici_mesh.fsdp", "ici_mesh.tensor", "ici_mesh.expert", "ici_mesh.context")


def hydra_error(message):
    """What hydra/_internal/utils.py:run_and_report prints for a composition error, then exit 1
    (utils.py:302 at v1.3.0)."""
    sys.stderr.write("%s\n\nSet the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n" % message)
    sys.exit(1)


def fail(message):
    """An uncaught exception in train.py: a traceback and exit 1."""
    sys.stderr.write("Traceback (most recent call last):\n  File \"torchprime/torch_xla_models/train.py\", in main\n%s\n"
                     % message)
    sys.exit(1)


def compose(argv):
    config, choices = dict(DEFAULTS), {"model": "llama-3-8b", "dataset": "wikitext", "task": "train"}
    for item in argv:
        key, eq, value = item.partition("=")
        if not eq or not key:
            # hydra/core/override_parser/overrides_parser.py:95: a word without '=' is no override.
            hydra_error("Error parsing override '%s'\nmissing EQUAL at '<EOF>'" % item)
        if key.startswith("+") or key.startswith("~"):
            # Additions and deletions are Hydra's own (config_loader_impl.py:349-387); nothing the
            # harness renders uses them, and the double keeps no config to add to.
            hydra_error("Could not override '%s': the double takes no +/~ overrides" % key)
        if key in GROUPS:
            # defaults_list.py:778-792: an option needs GROUP/OPTION.yaml; the last choice wins (107-110).
            if not os.path.isfile(os.path.join(HERE, "configs", key, value + ".yaml")):
                options = sorted(f[:-5] for f in os.listdir(os.path.join(HERE, "configs", key)) if f.endswith(".yaml"))
                hydra_error("In 'default': Could not find '%s/%s'\n\nAvailable options in '%s':\n%s"
                            % (key, value, key, "\n".join("\t" + o for o in options)))
            choices[key] = value
            continue
        if key not in KEYS:
            # config_loader_impl.py:270, 388-395: the composed config is struct, a missing key is refused.
            hydra_error("Could not override '%s'.\nTo append to your config use +%s" % (key, item))
        config[key] = value  # applied in order: the last of a repeated key wins
    return config, choices


def integer(config, key):
    try:
        return int(config[key])
    except ValueError:
        # OmegaConf validates the node's type: these keys are ints in the yaml.
        hydra_error("Error merging override %s=%s\nValue '%s' of type 'str' could not be converted to Integer"
                    % (key, config[key], config[key]))
    return 0


def host_name():
    try:
        return subprocess.run(["hostname"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return socket.gethostname()


def slice_of():
    """(worker_id, worker_count, chips_per_host) from the TPU metadata, as PJRT finds them."""
    chips = os.environ.get("CCL_TPU_CHIPS")
    metadata = os.environ.get("CCL_TPU_METADATA")
    if os.environ.get("PJRT_DEVICE") != "TPU" or not chips or not metadata or not os.path.isfile(metadata):
        fail("RuntimeError: No TPU devices found (PJRT_DEVICE=%s)" % os.environ.get("PJRT_DEVICE", ""))
    with open(metadata, encoding="utf-8") as f:
        facts = json.load(f)
    return facts["worker_id"], facts["worker_count"], int(chips)


def main(argv):
    config, choices = compose(argv)
    if config["torch_dtype"] != "bfloat16":
        fail("AssertionError: Currently only bfloat16 is supported")  # train.py:60
    mesh = {key: integer(config, key) for key in MESH}
    if mesh["ici_mesh.context"] > 1:
        fail("RuntimeError: Specify context parallelism size in config.model as well")  # utils/config_utils.py:24-26
    worker, workers, chips = slice_of()
    devices = workers * chips
    product = 1
    for value in mesh.values():
        product *= value
    if product != devices:  # topology.py:62-67
        fail("AssertionError: Mesh is not using all the available devices. The environment has %d devices. "
             "Mesh requested: ICI=%s" % (devices, {k.split(".")[1]: v for k, v in mesh.items()}))
    steps = integer(config, "task.max_steps")
    batch = integer(config, "task.global_batch_size")
    host = host_name()
    print("%s: torchprime double, process %d of %d, %d chips, mesh %s, model %s, sharding %s, batch %d, %d steps"
          % (host, worker, workers, devices, {k.split(".")[1]: v for k, v in mesh.items()}, choices["model"],
             choices.get("model/sharding", "llama-fsdp"), batch, steps), flush=True)
    # utils/profiling.py:19-35 (ensure_profile_end_step).
    start = integer(config, "profile_start_step")
    if start < 0 or start >= steps - 1:
        print("%s: profiling off (profile_start_step %d, %d steps)" % (host, start, steps), flush=True)
        return 0
    end = start + 20 if config["profile_end_step"] == "null" else integer(config, "profile_end_step")
    end = max(min(end, steps - 5), start + 1)
    # base_trainer.py:300-311: the trace starts after step `start` and stops after step `end`, on
    # every host; one StepMarker per step (torch_xla init_python_bindings.cpp:678 at v2.8.0).
    frame = "$base_trainer.py:359 train_step"
    data = xspace.step_xspace(host, chips, range(start + 1, end + 1), frame, collective="all-gather", step_marker=True)
    path = xspace.profile_path(config["profile_dir"], host)
    xspace.write_xspace(path, data)
    print("%s: profile of steps %d..%d written to %s" % (host, start + 1, end, path), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
