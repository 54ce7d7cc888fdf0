"""The platform audit as a test: the rules a rendered run must meet on Perlmutter or a TPU VM,
each checked over a rendered directory, and the table of which rules every reference card owes.

    platform_rules.py check CARD_NAME RENDERED_DIR     the card's rules over its render; exit 1
                                                        naming each broken rule
    platform_rules.py rules CARD_NAME                   the card's rule names, one a line
    platform_rules.py cards                             every card the table knows

Why each rule (the sources are cited in docs/containers.md and docs/contracts/):
- hf_cache_on_every_node: HF_HOME is node-local (/tmp); every container bind-mounts it and podman
  refuses a missing mount source (containers/common pkg/parse/parse.go ValidateVolumeHostDir), so
  each node must create it before the first container starts.
- nccl_plugin_is_image_cuda: the site's NCCL plugin (podman-hpc --nccl / --nccl-cu13) is built
  for one CUDA major; it must be the image's (launch.container.cuda), and the card must say the same.
- one_profiler_per_process: CUPTI takes one subscriber; a torch.profiler trace taken under nsys
  loses its GPU kernels, so no framework process runs under both.
- one_json_per_timed_pass: vLLM's bench latency returns after the profiled batch, before writing
  --output-json; a pass with both leaves no latencies.
- preflight_before_start: the in-job preflight (ccl_preflight.py) runs before the first framework
  command, so a flag the image's framework lacks costs seconds, not the allocation.
- image_built_before_job: no image build inside the job (the login node builds and migrates).
- dataset_is_what_runs: the serving benchmarks run random prompts; the card must not say otherwise.
- traces_where_collected: every trace the plan expects is written under $RUN_DIR/traces (or the
  TPU host's traces/), by the names trace/trace_names knows.
"""
import json
import os
import re
import sys

import yaml

# The one reader of the launch scripts' bash arrays is the preflight's, which the harness ships.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "templates", "common"))
from ccl_preflight import logical_lines, simulate  # noqa: E402

PERLMUTTER = ["hf_cache_on_every_node", "nccl_plugin_is_image_cuda", "one_profiler_per_process", "preflight_before_start",
              "image_built_before_job", "traces_where_collected"]
TPU = ["one_profiler_per_process", "preflight_before_start", "traces_where_collected"]
TABLE = {
    "deepseek-v3-16b-megatron-perlmutter": PERLMUTTER,
    "llama-3.1-8b-torchtitan-perlmutter": PERLMUTTER,
    "qwen3-4b-torchtitan-perlmutter": PERLMUTTER,
    "qwen3-4b-vllm-perlmutter": PERLMUTTER + ["one_json_per_timed_pass", "dataset_is_what_runs"],
    # vllm serve + vllm bench serve: the client reads the card's dataset itself.
    "mixtral-8x7b-vllm-serve-perlmutter": PERLMUTTER,
    "deepseek-moe-16b-sglang-perlmutter": PERLMUTTER + ["one_json_per_timed_pass", "dataset_is_what_runs"],
    "qwen3-4b-vllm-tpu-v6e": TPU + ["one_json_per_timed_pass", "dataset_is_what_runs"],
    "deepseek-v2-16b-maxtext-tpu-v6e": TPU,
    "llama-3.1-8b-maxtext-tpu-v6e-16": TPU,
    "llama-3.1-8b-torchxla-tpu": TPU,
    "tiny-ddp": [],
}
# What starts the framework in each template: the lines the process rules look at.
FRAMEWORK_START = re.compile(r"vllm bench latency|vllm serve\b|vllm bench serve\b|\btorchrun\b|sglang\.bench_one_batch|torchtitan\.train|MaxText\.train|torch_xla_models/train\.py|"
                             r"\"\$\{launch\[@\]\}\"|\"\$\{launcher\[@\]\}\"")
def scripts(rendered):
    names = ["launch.sbatch", "launch.sh", "remote.sh"]
    return {n: open(os.path.join(rendered, n), encoding="utf-8").read() for n in names
            if os.path.isfile(os.path.join(rendered, n))}


def starts_framework(line):
    return FRAMEWORK_START.search(line) and "ccl_preflight.py" not in line and \
        not line.strip().startswith(("echo", "log ", "local ", "launch+=", "launch=("))


def framework_lines(text):
    return [l for l in simulate(text) if starts_framework(l)]


def torch_profiler_on(line, rendered):
    if "--use-pytorch-profiler" in line:
        return True
    if re.search(r"(^|\s)--profile(\s|$)", line) and "--profile-step-start" not in line:
        # vLLM's and SGLang's --profile is torch.profiler; Megatron's alone (with its step range)
        # is cudaProfilerStart/Stop, nsys's capture range.
        return True
    if "torchtitan.train" in line and "--profiling.no-enable-profiling" not in line:
        toml = os.path.join(rendered, "train.toml")
        return os.path.isfile(toml) and re.search(r"^enable_profiling\s*=\s*true", open(toml).read(), re.M) is not None
    return False


def rule_hf_cache_on_every_node(rendered, plan, card):
    text = scripts(rendered).get("launch.sbatch", "")
    lines = logical_lines(text)
    mkdir = [i for i, l in enumerate(lines) if re.search(r'mkdir -p "\$HF_HOME"', l)
             and (re.search(r'(^|\|\|\s*)srun\s[^;|]*mkdir -p', l.strip()) or plan["geometry"]["nodes"] == 1)]
    mounts = "--volume \"$HF_HOME:$HF_HOME\"" in text
    first_container = next((i for i, l in enumerate(lines) if '"${container[@]}"' in l and l.strip().startswith(("srun", '"${'))),
                           None)
    if not mounts and "HF_HOME" not in text:
        return []
    if not mkdir:
        return ["HF_HOME is bind-mounted into the containers but no step creates it on every node"]
    if first_container is not None and mkdir[0] > first_container:
        return ["HF_HOME is created on the nodes only after the first container has started"]
    return []


def rule_nccl_plugin_is_image_cuda(rendered, plan, card):
    container = plan.get("container", {})
    problems = []
    declared = str(((card.get("launch") or {}).get("container") or {}).get("cuda", ""))
    if container.get("runtime") in ("podman-hpc", "shifter") and not declared:
        problems.append("the card does not declare its image's CUDA (launch.container.cuda)")
    major = declared.split(".")[0] if declared else ""
    if major and str(container.get("cuda_major")) != major:
        problems.append("plan.json's cuda_major %s is not the image's CUDA %s" % (container.get("cuda_major"), declared))
    driver = str(((card.get("workload") or {}).get("hardware") or {}).get("driver_version", ""))
    found = re.search(r"(\d+)", driver)
    if major and found and found.group(1) != major:
        problems.append("the card's driver_version %s is not the image's CUDA %s" % (driver, declared))
    text = scripts(rendered).get("launch.sbatch", "")
    want = {"13": "--nccl-cu13", "12": "--nccl"}.get(major)
    if container.get("runtime") == "podman-hpc" and want:
        used = re.findall(r"podman-hpc run .*?--gpu( --nccl(?:-cu13)?)?\b", text)
        if [u.strip() for u in used] != [want]:
            problems.append("the job injects %s, not %s for the image's CUDA %s" % (used, want, declared))
    return problems


def rule_one_profiler_per_process(rendered, plan, card):
    problems = []
    for name, text in scripts(rendered).items():
        for line in framework_lines(text):
            if "nsys profile" in line and torch_profiler_on(line, rendered):
                problems.append("%s: one process under both nsys and torch.profiler: %s" % (name, line.strip()[:160]))
    return problems


def rule_one_json_per_timed_pass(rendered, plan, card):
    problems = []
    for name, text in scripts(rendered).items():
        for line in framework_lines(text):
            if "vllm bench latency" in line and re.search(r"(^|\s)--profile(\s|$)", line) and "--output-json" in line:
                problems.append("%s: --profile and --output-json in one vllm bench latency (no JSON is written)" % name)
    return problems


def rule_preflight_before_start(rendered, plan, card):
    problems = []
    for name, text in scripts(rendered).items():
        lines = simulate(text)
        starts = [i for i, l in enumerate(lines) if starts_framework(l)]
        if not starts:
            continue
        preflight = [i for i, l in enumerate(lines) if "ccl_preflight.py" in l and "python3" in l]
        if not preflight or preflight[0] > starts[0]:
            problems.append("%s starts the framework before the preflight" % name)
        elif not os.path.isfile(os.path.join(rendered, "ccl_preflight.py")):
            problems.append("%s runs ccl_preflight.py, which the render did not write" % name)
    return problems


def rule_image_built_before_job(rendered, plan, card):
    text = scripts(rendered).get("launch.sbatch", "")
    if re.search(r"^\s*podman-hpc (build|migrate)\b", text, re.MULTILINE):
        return ["the job builds or migrates the image inside the allocation"]
    return []


def rule_dataset_is_what_runs(rendered, plan, card):
    dataset = str(((card.get("workload") or {}).get("data") or {}).get("dataset", "") or "").lower()
    if dataset and not (dataset in ("random", "synthetic", "dummy") or dataset.startswith("random_")
                        or dataset.endswith("_random")):
        return ["the card says dataset %s, but the benchmark runs random prompts" % dataset]
    return []


def rule_traces_where_collected(rendered, plan, card):
    texts = "\n".join(scripts(rendered).values())
    problems = []
    for kind in plan.get("traces", []):
        if kind == "nsys" and not re.search(r'--output="\$RUN_DIR/traces/nsys_%q\{', texts):
            problems.append("nsys reports are not written as traces/nsys_<rank>")
        if kind == "nsys" and "nsys export --type=sqlite" not in texts:
            problems.append("nsys reports are not exported to SQLite, which the CCL-Bench tools read")
        if kind == "torch_profiler" and "$RUN_DIR/traces" not in texts and "$RUN_DIR/\"traces" not in texts:
            problems.append("torch.profiler traces are not written under $RUN_DIR/traces")
        if kind == "xplane" and "$here/traces" not in texts:
            problems.append("XPlane traces are not gathered into the host's traces/")
    return problems


def check(card_name, rendered):
    plan = json.load(open(os.path.join(rendered, "plan.json"), encoding="utf-8"))
    card = yaml.safe_load(open(os.path.join(rendered, "card.yaml"), encoding="utf-8"))
    broken = []
    for rule in TABLE[card_name]:
        for problem in globals()["rule_" + rule](rendered, plan, card):
            broken.append("%s: %s" % (rule, problem))
    return broken


def main(argv):
    if argv[:1] == ["cards"]:
        print("\n".join(sorted(TABLE)))
    elif argv[:1] == ["rules"] and len(argv) == 2:
        print("\n".join(TABLE[argv[1]]))
    elif argv[:1] == ["check"] and len(argv) == 3:
        if argv[1] not in TABLE:
            print("%s: not in the platform rules table (tests/e2e/platform_rules.py TABLE): add it" % argv[1])
            return 1
        broken = check(argv[1], argv[2])
        for line in broken:
            print("%s: %s" % (argv[1], line))
        return 1 if broken else 0
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
