"""MaxText's train entry point at tpu-recipes-v0.1.4, as a test double (README.md beside MaxText/).

Checks the command line the way MaxText/pyconfig.py does (docs/contracts/maxtext-tpu-recipes-v0.1.4.yaml
cites each rule) and writes this host's XPlane for the profiled steps where MaxText would.
"""
import json
import os
import socket
import subprocess
import sys

# The shared double library as the suite copies it into the checkout (the docker double also puts
# the source tree's on PYTHONPATH).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "doubles", "lib"))
import double_common as dc  # noqa: E402
import xspace  # noqa: E402

CONTRACT = dc.load_contract("maxtext", "tpu-recipes-v0.1.4")
ICI_AXES = ("ici_data_parallelism", "ici_fsdp_parallelism", "ici_tensor_parallelism", "ici_expert_parallelism",
            "ici_pipeline_parallelism", "ici_context_parallelism")


def fail(message):
    """An uncaught exception in MaxText: a traceback and exit 1."""
    sys.stderr.write("Traceback (most recent call last):\n  File \"MaxText/train.py\", in <module>\n%s\n" % message)
    sys.exit(1)


def parse(argv):
    if not argv or not os.path.isfile(argv[0]):
        fail("FileNotFoundError: config file %r" % (argv[0] if argv else None))
    known = {option["name"] for option in CONTRACT["options"]}
    config = {}
    for item in argv[1:]:
        key, eq, value = item.partition("=")
        if not eq:
            fail("ValueError: %r is not a KEY=VALUE override" % item)
        if key not in known:
            # MaxText/pyconfig.py:408-410 at 9f1820b4: every command-line key must be in base.yml
            fail("ValueError: Key %s was passed at the command line but isn't in config." % key)
        config[key] = value  # OmegaConf.from_cli: the last of a repeated key wins
    return config


def integer(config, key, default):
    try:
        return int(config.get(key, default))
    except ValueError:
        fail("ValueError: %s=%r is not an integer" % (key, config.get(key)))
    return 0


def host_name():
    try:
        return subprocess.run(["hostname"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return socket.gethostname()


def slice_of():
    """(worker_id, worker_count, chips_per_host) from the TPU metadata, as JAX finds them."""
    chips = os.environ.get("CCL_TPU_CHIPS")
    metadata = os.environ.get("CCL_TPU_METADATA")
    if not chips or not metadata or not os.path.isfile(metadata):
        fail("RuntimeError: Unable to initialize backend 'tpu': no TPU devices found (JAX_PLATFORMS=%s)"
             % os.environ.get("JAX_PLATFORMS", ""))
    with open(metadata, encoding="utf-8") as f:
        facts = json.load(f)
    return facts["worker_id"], facts["worker_count"], int(chips)


def step():
    """One training step (the Python frame the profile shows per step)."""


def main(argv):
    config = parse(argv)
    model = config.get("model_name", "default")
    if model not in CONTRACT["model_names"]:
        fail("ValueError: Invalid model name %s" % model)
    if config.get("profiler", "") not in ("", "nsys", "xplane"):
        fail("ValueError: profiler must be one of '', 'nsys', 'xplane'")
    dataset = config.get("dataset_type", "tfds")
    if dataset not in CONTRACT["dataset_types"]:
        fail("ValueError: dataset_type %s" % dataset)
    if dataset == "tfds":
        fail("ValueError: dataset_type tfds needs dataset_path, which this run does not give")
    if model in ("gpt3-22b", "gpt3-6b") and "max_target_length" in config:
        fail("ValueError: Keys ['max_target_length'] are overridden by both the model config and the command line")
    worker, workers, chips = slice_of()
    devices = workers * chips
    axes = {key: integer(config, key, -1 if key == "ici_fsdp_parallelism" else 1) for key in ICI_AXES}
    unknown = [key for key, value in axes.items() if value == -1]
    if len(unknown) > 1:
        fail("ValueError: at most one ICI axis may be -1: %s" % unknown)
    product = 1
    for value in axes.values():
        product *= value if value != -1 else 1
    if unknown:
        if devices % product:
            fail("ValueError: %d devices do not divide by the ICI axes' product %d" % (devices, product))
        axes[unknown[0]] = devices // product
        product = devices
    if product != devices:
        fail("AssertionError: Number of devices %d does not match the product of the ICI parallelism %d (%s)"
             % (devices, product, axes))
    steps = integer(config, "steps", 150001)
    host = host_name()
    print("%s: MaxText double, process %d of %d, %d chips, mesh %s, model %s, %d steps"
          % (host, worker, workers, devices, axes, model, steps), flush=True)
    if config.get("profiler") != "xplane":
        return 0
    skip = integer(config, "skip_first_n_steps_for_profiler", 1)
    active = integer(config, "profiler_steps", 5)
    if skip >= steps:
        fail("ValueError: Profiling requested but initial profiling step set past training final step")
    last = min(skip + active - 1, steps - 1)
    upload_all = config.get("upload_all_profiler_results", "false").lower() == "true"
    if not upload_all and worker != 0:
        return 0
    output = config.get("base_output_directory", "")
    run_name = config.get("run_name", "")
    if not output or not run_name:
        fail("ValueError: base_output_directory and run_name are needed to write the profile")
    frame = "$MaxText/train.py:%d step" % step.__code__.co_firstlineno
    data = xspace.step_xspace(host, chips, range(skip, last + 1), frame, collective="all-gather")
    path = xspace.profile_path(os.path.join(output, run_name, "tensorboard"), host)
    xspace.write_xspace(path, data)
    print("%s: profile of steps %d..%d written to %s" % (host, skip, last, path), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
