"""Test double of Megatron-LM core_v0.15.3's pretrain_gpt.py (docs/contracts/megatron-lm-core_v0.15.3.yaml).

Started by torchrun like the real one. It parses its command line as the real argparse does
(allow_abbrev=False, arguments.py:93-94: an unknown option or a prefix of one exits 2; --help
lists every option and exits 0), applies the parallel-degree checks of validate_args and
initialize_model_parallel (failing with their messages), logs each iteration like
training_log, and with --profile --use-pytorch-profiler writes each profiled rank's Kineto trace
as torch.profiler.tensorboard_trace_handler would: <host>_<pid>.<time_ns>.pt.trace.json in
--tensorboard-dir, holding ProfilerStep#S .. #E-1, saved only once iteration E starts. The last
rank writes a TensorBoard events file there, as Megatron's SummaryWriter does.
"""
import datetime
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# In the checkout: tests/doubles/lib beside this directory; in the e2e repository: copied under
# tests/doubles/lib at the repository's root, next to docs/contracts.
for lib in (os.path.join(HERE, "tests", "doubles", "lib"), os.path.join(HERE, "..", "lib")):
    if os.path.isfile(os.path.join(lib, "double_common.py")):
        sys.path.insert(0, lib)
        break
import double_common as dc  # noqa: E402

PROG = "pretrain_gpt.py"


def as_int(values, name, default):
    """argparse's type=int: a bad value exits 2 with argparse's message."""
    if name not in values:
        return default
    try:
        return int(values[name])
    except ValueError:
        dc.usage_error(PROG, f"argument {name}: invalid int value: '{values[name]}'")


def check_choices(values, contract):
    for option in contract["options"]:
        name, choices = option["name"], option.get("choices")
        if not choices or name not in values:
            continue
        given = values[name] if isinstance(values[name], list) else [values[name]]
        for value in given:
            if value not in choices:
                listed = ", ".join(f"'{c}'" for c in choices)
                dc.usage_error(PROG, f"argument {name}: invalid choice: '{value}' (choose from {listed})")


def fail(message):
    """An AssertionError/RuntimeError in validate_args or parallel_state: a traceback, exit 1."""
    sys.stderr.write(f"Traceback (most recent call last):\n  File \"{PROG}\"\n{message}\n")
    sys.exit(1)


def main():
    contract = dc.load_contract("megatron-lm", "core_v0.15.3")
    values = dc.parse_argparse(sys.argv[1:], contract, PROG)
    check_choices(values, contract)
    rank, world, _ = dc.dist_rank()

    tp = as_int(values, "--tensor-model-parallel-size", 1)
    pp = as_int(values, "--pipeline-model-parallel-size", 1)
    cp = as_int(values, "--context-parallel-size", 1)
    ep = as_int(values, "--expert-model-parallel-size", 1)
    etp = as_int(values, "--expert-tensor-parallel-size", tp)  # arguments.py:439-440
    micro = as_int(values, "--micro-batch-size", None)
    global_batch = as_int(values, "--global-batch-size", None)
    seq = as_int(values, "--seq-length", None)
    max_pos = as_int(values, "--max-position-embeddings", None)
    train_iters = as_int(values, "--train-iters", None)
    layers = as_int(values, "--num-layers", None)
    experts = as_int(values, "--num-experts", None)
    start = as_int(values, "--profile-step-start", 10)
    end = as_int(values, "--profile-step-end", 12)
    try:
        ranks = [int(r) for r in values.get("--profile-ranks", ["0"])]
    except ValueError as e:
        dc.usage_error(PROG, f"argument --profile-ranks: invalid int value: {e}")

    # validate_args (megatron/training/arguments.py), in its order.
    model = tp * pp * cp
    if world % model != 0:  # arguments.py:374
        fail(f"AssertionError: world size ({world}) is not divisible by total_model_size (total_model_size={model})")
    dp = world // model
    if micro is None or micro <= 0:  # arguments.py:522-523
        fail("AssertionError: --micro-batch-size must be set and positive")
    if global_batch is None:
        global_batch = micro * dp
    if layers is not None and layers % pp != 0:  # arguments.py:598
        fail("AssertionError: Number of layers should be divisible by the pipeline-model-parallel size")
    if values.get("--fp16") and values.get("--bf16"):  # arguments.py:724
        fail("AssertionError")
    if seq is not None and cp > 1 and seq % (cp * 2) != 0:  # arguments.py:844
        fail("AssertionError: seq-length should be a multiple of 2 * context-parallel-size if context-parallel-size > 1.")
    if seq is not None and (max_pos is None or max_pos < seq):  # arguments.py:856
        fail(f"AssertionError: max_position_embeddings ({max_pos}) must be greater than or equal to seq_length ({seq}).")
    if ep > 1:  # arguments.py:1036-1042
        if experts is None:
            fail("AssertionError: num_experts must be non None to use expert model parallelism")
        if experts % ep != 0:
            fail("AssertionError: Number of experts should be a multiple of expert model parallel_size.")
        if values.get("--fp16"):
            fail("AssertionError: Expert parallelism is not supported with fp16 training.")
    if values.get("--mock-data") and values.get("--data-path"):  # arguments.py:1067-1070
        fail("AssertionError: A single data source must be provided in training mode, else None")
    if values.get("--tokenizer-type") == "NullTokenizer" and "--vocab-size" not in values:  # tokenizer.py:69
        fail("AssertionError")
    if values.get("--tokenizer-type") == "HuggingFaceTokenizer" and not values.get("--tokenizer-model"):
        # tokenizer.py:49-52 hands None to transformers.AutoTokenizer.from_pretrained.
        fail("OSError: None is not a local folder and is not a valid model identifier")
    # --data-path: a prefix, or weight prefix pairs (arguments.py:2809-2815); each prefix's .idx and
    # .bin are opened when the datasets are built (indexed_dataset.py:244, 385).
    for prefix in values.get("--data-path") or []:
        try:
            float(prefix)
            continue  # a weight
        except ValueError:
            pass
        for suffix in (".idx", ".bin"):
            if not os.path.isfile(prefix + suffix):
                fail(f"FileNotFoundError: [Errno 2] No such file or directory: '{prefix}{suffix}'")
        with open(prefix + ".idx", "rb") as f:  # indexed_dataset.py:244-249
            if f.read(9) != b"MMIDIDX\x00\x00":
                fail(f"AssertionError: bad header, cannot read: {prefix}.idx")

    if train_iters is None:
        fail("double: no --train-iters (the real one would train by --train-samples; the harness always passes iterations)")
    if rank == 0:
        print(f"using world size: {world}, data-parallel size: {dp}, context-parallel size: {cp}, "
              f"hierarchical context-parallel sizes: None, tensor-model-parallel size: {tp}, "
              f"pipeline-model-parallel size: {pp}", flush=True)

    # initialize_model_parallel (megatron/core/parallel_state.py:697-752).
    expert_model = etp * ep * pp
    if world % expert_model != 0:
        fail(f"RuntimeError: world_size ({world}) is not divisible by expert_tensor_model_pipeline_parallel size ({expert_model})")
    # num_microbatches_calculator.py:340.
    if global_batch % (micro * dp) != 0:
        fail(f"AssertionError: global batch size ({global_batch}) is not divisible by micro batch size ({micro}) "
             f"times data parallel size ({dp})")

    profiled = values.get("--profile") and values.get("--use-pytorch-profiler") and rank in ranks
    trace_dir = values.get("--tensorboard-dir")
    if trace_dir and rank == world - 1:  # global_vars.py:171-178: the last rank's SummaryWriter
        os.makedirs(trace_dir, exist_ok=True)
        with open(os.path.join(trace_dir, f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}.0"), "wb"):
            pass

    # train(): prof.step() at the top of each iteration; schedule(wait=S-1, warmup=1, active=E-S,
    # repeat=1) records ProfilerStep#S..#E-1 and saves when step E begins (training.py:2155-2202).
    recorded, saved = [], False
    consumed = 0
    for iteration in range(1, train_iters + 1):
        if profiled and iteration == end and recorded and not saved:
            write_trace(trace_dir, rank, world, recorded)
            saved = True
        if profiled and start <= iteration <= end - 1:
            recorded.append(iteration)
        time.sleep(0.01)
        consumed += global_batch
        if rank == world - 1:  # print_rank_last (training.py:1591-1652)
            stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
            print(f" [{stamp}] iteration {iteration:8d}/{train_iters:8d} | consumed samples: {consumed:12d} | "
                  f"elapsed time per iteration (ms): 10.0 | learning rate: 1.000000E-04 | global batch size: {global_batch:5d} | "
                  f"lm loss: 1.000000E+01 | loss scale: 1.0 | number of skipped iterations:   0 | "
                  f"number of nan iterations:   0 |", flush=True)
    if rank == 0:
        print(f"[after training is done] datetime: {datetime.datetime.now():%Y-%m-%d %H:%M:%S}", flush=True)


def write_trace(trace_dir, rank, world, steps):
    if trace_dir is None:
        fail("TypeError: expected str, bytes or os.PathLike object, not NoneType")
    # torch.profiler.tensorboard_trace_handler's name: f"{worker_name}.{time.time_ns()}.pt.trace.json".
    name = f"{socket.gethostname()}_{os.getpid()}.{time.time_ns()}.pt.trace.json"
    dc.write_json(os.path.join(trace_dir, name), dc.kineto_trace(rank, world, steps))


if __name__ == "__main__":
    main()
