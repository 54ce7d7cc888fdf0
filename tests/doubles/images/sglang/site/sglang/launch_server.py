"""Stand-in for `python -m sglang.launch_server` at the reference cards' SGLang
(docs/contracts/sglang-29481685462732237d80d86076d6563e1f658102.yaml, launch_server:).

Parses with Python's argparse over the contract's launch_server options as prepare_server_args
does (server_args.py: argparse.ArgumentParser; ServerArgs.add_cli_args; parse_args): a unique
prefix is taken, an ambiguous or unknown option is refused with exit 2, --help lists every option.
--model-path is required (ServerArgs.model_path has no default). The server is a real HTTP server
on --host/--port (server_args.py host default "127.0.0.1", port default 30000): GET /health,
GET /v1/models, POST /generate (bench_serving --backend sglang's endpoint, streamed as
server-sent events), GET or POST /start_profile and /stop_profile (http_server.py
start_profile_async/stop_profile_async, `methods=["GET", "POST"]`). At /stop_profile every
scheduler (tp x pp x dp) writes its Kineto trace into $SGLANG_TORCH_PROFILER_DIR (default /tmp,
as the profiler's output_dir falls back to it) as <time>-TP-<tp_rank>.trace.json.gz
(scheduler_profiler_mixin.py stop_profile); the double adds -PP-<r> and -DP-<r> when pp or dp
> 1 so the names stay distinct (later versions' suffix, not read at the pin). SIGINT or SIGTERM
stops it.

Fault injection for the tests: CCL_DOUBLE_SGLANG_EXIT_BEFORE_HEALTH=1 makes the server exit 1
while loading, before it listens (a model that does not load).
"""
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sglang import serving_common as sc

dc = sc.dc
PROG = "launch_server.py"  # argparse's prog for `python -m sglang.launch_server` (sys.argv[0]'s basename)


def scheduler_trace(rank, world, steps):
    """A scheduler's Kineto trace: one forward pass per engine step, as with_stack names it."""
    trace = dc.kineto_trace(rank, world, range(1, len(steps) + 1))
    names = iter(steps)
    for event in trace["traceEvents"]:
        if event["name"].startswith("ProfilerStep#"):
            batch, prompt_tokens = next(names)
            event["name"] = "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py(1021): run_batch"
            event["cat"] = "python_function"
            event["args"] = {"batch": batch, "prompt_tokens": prompt_tokens}
    return trace


class Engine:
    def __init__(self, opts):
        integer = lambda name, default: int(opts.get(name, default))
        self.model = opts["--model-path"]
        self.tp, self.pp, self.dp = integer("--tp-size", 1), integer("--pp-size", 1), integer("--dp-size", 1)
        self.ep = integer("--ep-size", 1)
        self.max_running = int(opts["--max-running-requests"]) if "--max-running-requests" in opts else 256
        self.trace_dir = os.environ.get("SGLANG_TORCH_PROFILER_DIR", "/tmp")
        self.profiling = False
        self.profiled = []  # (prompt tokens, output tokens) of each request while profiling
        self.lock = threading.Lock()

    def stop_profile(self):
        with self.lock:
            self.profiling, requests = False, self.profiled
            self.profiled = []
        # The scheduler runs up to --max-running-requests at once: each wave is one prefill
        # (extend) step, then one decode step per further output token.
        steps = []
        for start in range(0, max(len(requests), 1), self.max_running):
            wave = requests[start:start + self.max_running] or [(1, 1)]
            steps.append((len(wave), sum(p for p, _ in wave)))
            steps += [(len(wave), 0)] * (max(o for _, o in wave) - 1)
        stamp = str(time.time())
        world = self.tp * self.pp * self.dp
        for dp_rank in range(self.dp):
            for pp_rank in range(self.pp):
                for tp_rank in range(self.tp):
                    rank = (dp_rank * self.pp + pp_rank) * self.tp + tp_rank
                    suffix = (f"-PP-{pp_rank}" if self.pp > 1 else "") + (f"-DP-{dp_rank}" if self.dp > 1 else "")
                    name = f"{stamp}-TP-{tp_rank}{suffix}.trace.json.gz"
                    dc.write_json(os.path.join(self.trace_dir, name), scheduler_trace(rank, world, steps), compress=True)
        print(f"Profiling done. Traces are saved to: {self.trace_dir}", flush=True)


def make_handler(engine):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            sys.stderr.write("INFO: %s %s\n" % (self.address_string(), fmt % args))

        def reply(self, status, body=None, text=None):
            data = (text or "").encode() if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json" if body is not None else "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def profile(self):
            if self.path == "/start_profile":
                with engine.lock:
                    engine.profiling = True
                return self.reply(200, text="Start profiling.\n")
            engine.stop_profile()
            return self.reply(200, text="Stop profiling. This will take some time.\n")

        def do_GET(self):
            if self.path == "/health":
                self.reply(200)
            elif self.path == "/v1/models":
                self.reply(200, {"object": "list", "data": [{"id": engine.model, "object": "model", "root": engine.model}]})
            elif self.path in ("/start_profile", "/stop_profile"):
                self.profile()
            elif self.path == "/get_server_info":
                self.reply(200, {"internal_states": [{}]})
            else:
                self.reply(404, {"detail": "Not Found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length) if length else b""
            if self.path in ("/start_profile", "/stop_profile"):
                return self.profile()
            if self.path == "/flush_cache":
                return self.reply(200, text="Cache flushed.\n")
            if self.path != "/generate":
                return self.reply(404, {"detail": "Not Found"})
            try:
                request = json.loads(raw or b"{}")
            except ValueError:
                return self.reply(400, {"error": {"message": "invalid JSON"}})
            prompt = request.get("text", request.get("input_ids", ""))
            prompt_tokens = (len(prompt) if isinstance(prompt, list) else len(str(prompt).split())) or 1
            max_new = int((request.get("sampling_params") or {}).get("max_new_tokens") or 128)
            with engine.lock:
                if engine.profiling:
                    engine.profiled.append((prompt_tokens, max_new))
            meta = lambda n: {"prompt_tokens": prompt_tokens, "completion_tokens": n}
            if not request.get("stream"):
                return self.reply(200, {"text": " tok" * max_new, "meta_info": meta(max_new)})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for n in range(1, max_new + 1):  # each chunk carries the text so far, as /generate streams it
                chunk = {"text": " tok" * n, "meta_info": meta(n)}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.0005)
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True

    return Handler


def main(argv):
    opts = sc.parse(argv, "launch_server", PROG)
    if "--model-path" not in opts:
        dc.usage_error(PROG, "the following arguments are required: --model-path/--model")
    engine = Engine(opts)
    if engine.ep > 1 and engine.tp % engine.ep != 0:
        sys.exit(f"AssertionError: tp_size {engine.tp} must be divisible by ep_size {engine.ep}")
    print(f"INFO: server_args: model_path={engine.model}, tp_size={engine.tp}, pp_size={engine.pp}, "
          f"dp_size={engine.dp}, ep_size={engine.ep}, max_running_requests={engine.max_running}", flush=True)
    if os.environ.get("CCL_DOUBLE_SGLANG_EXIT_BEFORE_HEALTH") == "1":
        print("RuntimeError: Rank 0 scheduler is dead. Please check if there are relevant logs.", flush=True)
        return 1
    host, port = opts.get("--host", "127.0.0.1"), int(opts.get("--port", 30000))
    server = ThreadingHTTPServer((host, port), make_handler(engine))
    server.daemon_threads = True

    def stop(signum, _frame):
        print(f"INFO: received signal {signum}: shutting down", flush=True)
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"INFO: Uvicorn running on http://{host}:{port} (double)", flush=True)
    server.serve_forever(poll_interval=0.2)
    server.server_close()
    print("INFO: Shutting down", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
