"""`vllm serve` and `vllm bench serve` of vllm/vllm-openai:v0.19.0, for the test cluster.

Both parse as vLLM does (double_common.parse_vllm_bench: FlexibleArgumentParser's spellings,
argparse's prefixes, an unknown option refused with exit 2) over the options the contract lists
in its serve: and bench_serve: sections (docs/contracts/vllm-v0.19.0.yaml, which cites the
source). The server is a real HTTP server on --host/--port: GET /health, GET /v1/models, POST
/v1/completions (streamed as server-sent events, as the OpenAI API does), and, only when
--profiler-config.profiler is set, POST /start_profile and /stop_profile; at /stop_profile every
GPU worker (tp x pp x dp) writes its Kineto trace as the latency double does. SIGTERM or SIGINT
stops it (cli/serve.py installs one handler for both). The client is a real HTTP client of it
and writes the result JSON under bench serve's key names (vllm/benchmarks/serve.py benchmark()).

Fault injection for the tests: CCL_DOUBLE_VLLM_NEVER_HEALTHY=1 makes /health answer 503 forever
(an engine that never comes up).
"""
import csv
import json
import math
import os
import random
import signal
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import double_common as dc

SERVE_USAGE = "vllm serve [model_tag] [options]"  # cli/serve.py subparser_init at 00a5fdd20935
BENCH_USAGE = "vllm bench serve [options]"
NEEDS_PATH = {"sharegpt", "burstgpt", "custom", "sonnet"}


def _parse(argv, contract, section, prog, usage):
    sub = {"allow_abbrev": contract.get("allow_abbrev"), "options": contract[section]["options"],
           "framework": "vllm"}
    dc.VLLM_BENCH_USAGE = usage  # the usage line the parser's errors print
    opts = dc.parse_vllm_bench(argv, sub, prog)
    for option in sub["options"]:
        value = opts.get(option["name"])
        if "choices" in option and value is not None and value not in [str(c) for c in option["choices"]]:
            dc.usage_error(prog, f"argument {option['name']}: invalid choice: '{value}'")
    return opts


# ---------------------------------------------------------------------------------------------
# The server


def worker_trace(rank, world, steps):
    """A worker's Kineto trace of `steps` engine steps: (batch, prompt tokens) each, 0 for a decode."""
    trace = dc.kineto_trace(rank, world, range(1, len(steps) + 1))
    names = iter(steps)
    for event in trace["traceEvents"]:
        if event["name"].startswith("ProfilerStep#"):
            batch, prompt_tokens = next(names)
            event["name"] = (f"execute_context_{batch}({prompt_tokens})_generation_0(0)" if prompt_tokens
                             else f"execute_context_0(0)_generation_{batch}({batch})")
    return trace


class Engine:
    def __init__(self, opts, model):
        integer = lambda name, default: int(opts.get(name, default))
        self.model = model
        self.tp, self.pp = integer("--tensor-parallel-size", 1), integer("--pipeline-parallel-size", 1)
        self.dp = integer("--data-parallel-size", 1)
        self.max_num_seqs = integer("--max-num-seqs", 256)
        self.max_model_len = int(opts["--max-model-len"]) if "--max-model-len" in opts else None
        self.profiler = opts.get("--profiler-config.profiler")
        self.trace_dir = opts.get("--profiler-config.torch_profiler_dir", "")
        self.profiling = False
        self.profiled = []  # (prompt tokens, output tokens) of each request while profiling
        self.lock = threading.Lock()

    def stop_profile(self):
        with self.lock:
            self.profiling, requests = False, self.profiled
            self.profiled = []
        if self.profiler != "torch":
            return
        # The scheduler runs up to --max-num-seqs requests a step: each wave is one prefill step,
        # then one decode step per further output token.
        steps = []
        for start in range(0, max(len(requests), 1), self.max_num_seqs):
            wave = requests[start:start + self.max_num_seqs] or [(1, 1)]
            steps.append((len(wave), sum(p for p, _ in wave)))
            steps += [(len(wave), 0)] * (max(o for _, o in wave) - 1)
        instance = uuid.uuid4().hex[:5]
        world = self.tp * self.pp * self.dp
        for rank in range(world):
            name = f"{instance}-rank-{rank}.{time.time_ns()}.pt.trace.json.gz"
            dc.write_json(os.path.join(os.path.abspath(self.trace_dir), name), worker_trace(rank, world, steps),
                          compress=True)
            with open(os.path.join(self.trace_dir, f"profiler_out_{rank % 4}.txt"), "w") as table:
                table.write("Name  Self CUDA  (double)\n")


def make_handler(engine):
    never_healthy = os.environ.get("CCL_DOUBLE_VLLM_NEVER_HEALTHY") == "1"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            sys.stderr.write("INFO: %s %s\n" % (self.address_string(), fmt % args))

        def reply(self, status, body=None):
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                self.reply(503 if never_healthy else 200)
            elif self.path == "/v1/models":
                self.reply(200, {"object": "list", "data": [{"id": engine.model, "object": "model", "root": engine.model}]})
            else:
                self.reply(404, {"detail": "Not Found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length) if length else b""
            if self.path in ("/start_profile", "/stop_profile"):
                # Registered only with a profiler configured; else FastAPI's 404.
                if not engine.profiler:
                    return self.reply(404, {"detail": "Not Found"})
                if self.path == "/start_profile":
                    with engine.lock:
                        engine.profiling = True
                else:
                    engine.stop_profile()
                return self.reply(200)
            if self.path != "/v1/completions":
                return self.reply(404, {"detail": "Not Found"})
            try:
                request = json.loads(raw or b"{}")
            except ValueError:
                return self.reply(400, {"object": "error", "message": "invalid JSON", "code": 400})
            if request.get("model") != engine.model:
                return self.reply(404, {"object": "error", "type": "NotFoundError", "code": 404,
                                        "message": f"The model `{request.get('model')}` does not exist."})
            prompt = request.get("prompt", "")
            prompt_tokens = len(str(prompt).split()) or 1
            max_tokens = int(request.get("max_tokens") or 16)
            if engine.max_model_len and prompt_tokens + max_tokens > engine.max_model_len:
                return self.reply(400, {"object": "error", "type": "BadRequestError", "code": 400,
                                        "message": "This model's maximum context length is "
                                                   f"{engine.max_model_len} tokens."})
            with engine.lock:
                if engine.profiling:
                    engine.profiled.append((prompt_tokens, max_tokens))
            if not request.get("stream"):
                text = " tok" * max_tokens
                return self.reply(200, {"id": "cmpl-double", "object": "text_completion", "model": engine.model,
                                        "choices": [{"index": 0, "text": text, "finish_reason": "length"}],
                                        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": max_tokens,
                                                  "total_tokens": prompt_tokens + max_tokens}})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for _ in range(max_tokens):
                chunk = {"id": "cmpl-double", "object": "text_completion", "model": engine.model,
                         "choices": [{"index": 0, "text": " tok", "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.0005)
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": max_tokens,
                     "total_tokens": prompt_tokens + max_tokens}
            self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\ndata: [DONE]\n\n".encode())
            self.close_connection = True

    return Handler


def serve(argv, contract):
    model_tag = None
    if argv and not argv[0].startswith("-"):
        model_tag, argv = argv[0], argv[1:]
    opts = _parse(argv, contract, "serve", "vllm serve", SERVE_USAGE)
    model = model_tag or opts.get("--model")  # cli/serve.py ServeSubcommand.cmd: the positional wins
    if not model:
        dc.usage_error("vllm serve", "a model (model_tag) is required by this double")
    engine = Engine(opts, model)
    # ProfilerConfig._validate_profiler_config, as in the latency double.
    if engine.trace_dir and engine.profiler != "torch":
        sys.exit("ValueError: torch_profiler_dir is only applicable when profiler is set to 'torch'")
    if engine.profiler == "torch" and not engine.trace_dir:
        sys.exit("ValueError: torch_profiler_dir must be set when profiler is 'torch'")
    if engine.profiler == "torch" and os.environ.get("CCL_DOUBLE_NSYS_REPORT"):
        sys.exit("double: torch.profiler under nsys (CUPTI has a subscriber already): the trace would have no kernels")
    host, port = opts.get("--host", "0.0.0.0"), int(opts.get("--port", 8000))
    server = ThreadingHTTPServer((host, port), make_handler(engine))
    server.daemon_threads = True

    def stop(signum, _frame):
        print(f"INFO: received signal {signum}: shutting down", flush=True)
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"INFO: vLLM API server (double) for {model}: tp {engine.tp}, pp {engine.pp}, dp {engine.dp}; "
          f"listening on http://{host}:{port}", flush=True)
    server.serve_forever(poll_interval=0.2)
    server.server_close()
    print("INFO: Shutting down FastAPI HTTP server.", flush=True)
    return 0


# ---------------------------------------------------------------------------------------------
# The client


def load_prompts(opts, name, path):
    """(prompt, prompt tokens, output tokens) per request, as each dataset class samples them."""
    count = int(opts.get("--num-prompts", 1000))
    rows = []
    if name == "random":
        input_len, output_len = int(opts.get("--random-input-len", 1024)), int(opts.get("--random-output-len", 128))
        rows = [(" ".join(["tok"] * input_len), input_len, output_len)] * count
    elif name == "hf":
        sys.exit("double: --dataset-name hf needs the datasets library and the Hub: not in this double")
    else:
        if not os.path.isfile(path):
            sys.exit(f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'")
        if name == "sharegpt":
            # ShareGPTDataset: entries with at least two turns; the reply's length unless
            # --sharegpt-output-len fixes it.
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            for entry in data:
                turns = entry.get("conversations", [])
                if len(turns) >= 2:
                    prompt, reply = turns[0]["value"], turns[1]["value"]
                    out = int(opts.get("--sharegpt-output-len", len(reply.split()) or 1))
                    rows.append((prompt, len(prompt.split()) or 1, out))
        elif name == "custom":
            with open(path, encoding="utf-8") as f:  # CustomDataset: JSONL, a "prompt" per line
                for line in f:
                    if line.strip():
                        prompt = json.loads(line)["prompt"]
                        rows.append((prompt, len(prompt.split()) or 1, int(opts.get("--custom-output-len", 256))))
        elif name == "burstgpt":
            with open(path, encoding="utf-8") as f:  # BurstGPTDataset: the trace's token counts
                for record in csv.DictReader(f):
                    tokens = int(record["Request tokens"])
                    rows.append((" ".join(["tok"] * tokens), tokens, int(record["Response tokens"])))
        else:  # sonnet
            with open(path, encoding="utf-8") as f:
                lines = [line.strip() for line in f if line.strip()]
            rows = [(line, len(line.split()), 150) for line in lines]
    if not rows:
        sys.exit(f"ValueError: no requests could be sampled from {path!r}")
    # maybe_oversample_requests: too few samples are repeated up to --num-prompts.
    return [rows[i % len(rows)] for i in range(count)]


def post(url, body=None, stream=False):
    request = urllib.request.Request(url, data=json.dumps(body or {}).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(request, timeout=600)


def one_request(url, model, prompt, prompt_len, output_len, start):
    """One streamed completion, timed as RequestFuncOutput is: ttft, itl, latency."""
    out = {"success": False, "prompt_len": prompt_len, "output_tokens": 0, "ttft": 0.0, "itl": [],
           "latency": 0.0, "start_time": start - BENCH_START, "error": "", "generated_text": ""}
    body = {"model": model, "prompt": prompt, "max_tokens": output_len, "stream": True, "ignore_eos": True}
    sent = time.perf_counter()
    last = sent
    try:
        with post(url, body) as response:
            for raw in response:
                line = raw.decode().strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[len("data: "):])
                now = time.perf_counter()
                if chunk.get("choices"):
                    if out["output_tokens"] == 0:
                        out["ttft"] = now - sent
                    else:
                        out["itl"].append(now - last)
                    out["generated_text"] += chunk["choices"][0].get("text", "")
                    out["output_tokens"] += 1
                    last = now
        out["latency"] = time.perf_counter() - sent
        out["success"] = True
    except (urllib.error.URLError, OSError, ValueError) as error:
        out["error"] = str(error)
    return out


BENCH_START = time.perf_counter()


def stats(values, percentiles):
    values = values or [0.0]
    ms = [v * 1000 for v in values]
    ordered = sorted(ms)
    pick = lambda p: ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]
    return statistics.mean(ms), statistics.median(ms), statistics.pstdev(ms), [(p, pick(p)) for p in percentiles]


def bench_serve(argv, contract):
    opts = _parse(argv, contract, "bench_serve", "vllm bench serve", BENCH_USAGE)
    name, path = opts.get("--dataset-name", "random"), opts.get("--dataset-path")
    if name == "random" and path is not None:  # datasets.py _ValidateDatasetArgs
        dc.usage_error("vllm bench serve", "Cannot use 'random' dataset with --dataset-path. Please specify the "
                       "appropriate --dataset-name (e.g., 'sharegpt', 'custom', 'sonnet') for your dataset file: "
                       f"{path}")
    if name in NEEDS_PATH and path is None:
        sys.exit("ValueError: dataset_path must be provided for loading data.")
    rate = float(opts.get("--request-rate", "inf"))
    base = opts.get("--base-url") or f"http://{opts.get('--host', '127.0.0.1')}:{opts.get('--port', '8000')}"
    api_url = base + opts.get("--endpoint", "/v1/completions")
    model = opts.get("--model")
    if model is None:
        with urllib.request.urlopen(base + "/v1/models", timeout=30) as response:
            model = json.load(response)["data"][0]["id"]
    requests = load_prompts(opts, name, path)

    print("Starting initial single prompt test run...")
    first = one_request(api_url, model, *requests[0], time.perf_counter())
    if not first["success"]:
        sys.exit("ValueError: Initial test run failed - Please make sure benchmark arguments are correctly "
                 f"specified. Error: {first['error']}")
    print("Initial test run completed. Starting main benchmark run...")
    if opts.get("--profile"):
        print("Starting profiler...")
        try:
            post(base + "/start_profile").close()
            print("Profiler started")
        except urllib.error.URLError:
            pass  # benchmark(): `if profile_output.success:` only prints; the run goes on
    random.seed(int(opts.get("--seed", 0)))
    outputs, threads = [None] * len(requests), []
    started = time.perf_counter()
    for i, (prompt, prompt_len, output_len) in enumerate(requests):
        def run(i=i, prompt=prompt, prompt_len=prompt_len, output_len=output_len):
            outputs[i] = one_request(api_url, model, prompt, prompt_len, output_len, time.perf_counter())
        thread = threading.Thread(target=run)
        thread.start()
        threads.append(thread)
        if not math.isinf(rate):
            time.sleep(random.expovariate(rate))  # get_request: Poisson arrivals at burstiness 1
    for thread in threads:
        thread.join()
    duration = time.perf_counter() - started
    if opts.get("--profile"):
        print("Stopping profiler...")
        try:
            post(base + "/stop_profile").close()
            print("Profiler stopped")
        except urllib.error.URLError:
            pass

    done = [o for o in outputs if o["success"]]
    total_in = sum(o["prompt_len"] for o in done)
    total_out = sum(o["output_tokens"] for o in done)
    result = {
        "date": datetime.now().strftime("%Y%m%d-%H%M%S"), "endpoint_type": opts.get("--backend", "openai"),
        "backend": opts.get("--backend", "openai"), "label": None, "model_id": model, "tokenizer_id": model,
        "num_prompts": len(requests), "request_rate": "inf" if math.isinf(rate) else rate,
        "burstiness": float(opts.get("--burstiness", 1.0)), "max_concurrency": None,
        # benchmark()'s result dict (serve.py at 009e6d4a1cd6)
        "duration": duration, "completed": len(done), "failed": len(outputs) - len(done),
        "total_input_tokens": total_in, "total_output_tokens": total_out,
        "request_throughput": len(done) / duration, "request_goodput": None,
        "output_throughput": total_out / duration, "total_token_throughput": (total_in + total_out) / duration,
        "input_lens": [o["prompt_len"] for o in outputs], "output_lens": [o["output_tokens"] for o in outputs],
        "ttfts": [o["ttft"] for o in outputs], "itls": [o["itl"] for o in outputs],
        "latencies": [o["latency"] for o in outputs], "start_times": [o["start_time"] for o in outputs],
        "generated_texts": [o["generated_text"] for o in outputs], "errors": [o["error"] for o in outputs],
    }
    percentiles = [float(p) for p in opts.get("--metric-percentiles", "99").split(",")]
    series = {
        "ttft": [o["ttft"] for o in done],
        "tpot": [(o["latency"] - o["ttft"]) / (o["output_tokens"] - 1) for o in done if o["output_tokens"] > 1],
        "itl": [v for o in done for v in o["itl"]],
        "e2el": [o["latency"] for o in done],
    }
    print("{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="))
    print("{:<40} {:<10}".format("Successful requests:", len(done)))
    for metric in (opts.get("--percentile-metrics") or "ttft,tpot,itl").split(","):
        mean, median, std, pcts = stats(series[metric], percentiles)
        result[f"mean_{metric}_ms"], result[f"median_{metric}_ms"], result[f"std_{metric}_ms"] = mean, median, std
        print("{:<40} {:<10.2f}".format(f"Mean {metric.upper()} (ms):", mean))
        for p, value in pcts:
            result[f"p{int(p) if int(p) == p else p}_{metric}_ms"] = value
    if len(done) == 0:
        print("WARNING: All requests failed. This is likely due to a misconfiguration on the benchmark arguments.")
    if opts.get("--save-result"):
        file_name = opts.get("--result-filename") or (f"{opts.get('--backend', 'openai')}-{opts.get('--request-rate', 'inf')}"
                                                      f"qps-{model.split('/')[-1]}-{result['date']}.json")
        if opts.get("--result-dir"):
            os.makedirs(opts["--result-dir"], exist_ok=True)
            file_name = os.path.join(opts["--result-dir"], file_name)
        with open(file_name, "w", encoding="utf-8") as f:
            json.dump(result, f)
    return 0
