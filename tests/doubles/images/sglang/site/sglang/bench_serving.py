"""Stand-in for `python -m sglang.bench_serving` at the reference cards' SGLang
(docs/contracts/sglang-29481685462732237d80d86076d6563e1f658102.yaml, bench_serving:).

Parses with argparse over the contract's bench_serving options as its `__main__` parser does (a
plain ArgumentParser: a unique prefix taken, an unknown option refused with exit 2, a
--dataset-name outside its choices refused with exit 2). Random prompts only: --random-input-len
and --random-output-len, each request's lengths drawn from [len * --random-range-ratio, len] as
the option's help says ("Range of sampled ratio of input/output length"). As benchmark() does:
--warmup-requests requests first (output capped at 32), then with --profile POST /start_profile,
every request at --request-rate (Poisson arrivals, all at once for inf), POST /stop_profile; then
one JSON line appended to --output-file with the result's keys (completed, mean_ttft_ms,
mean_tpot_ms, ...). The requests go to --host:--port/generate (run_benchmark: backend sglang).
"""
import json
import math
import os
import random
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime

from sglang import serving_common as sc

dc = sc.dc
PROG = "bench_serving.py"


def post(url, body=None):
    request = urllib.request.Request(url, data=json.dumps(body or {}).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(request, timeout=600)


def one_request(url, prompt, prompt_len, output_len):
    """One streamed /generate, timed as async_request_sglang_generate does: ttft, itl, latency."""
    out = {"success": False, "prompt_len": prompt_len, "output_len": 0, "ttft": 0.0, "itl": [], "latency": 0.0,
           "error": "", "generated_text": ""}
    body = {"text": prompt, "sampling_params": {"temperature": 0.0, "max_new_tokens": output_len, "ignore_eos": True},
            "stream": True}
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
                if out["ttft"] == 0.0:
                    out["ttft"] = now - sent
                else:
                    out["itl"].append(now - last)
                last = now
                out["generated_text"] = chunk["text"]
                out["output_len"] = chunk["meta_info"]["completion_tokens"]
        out["latency"] = time.perf_counter() - sent
        out["success"] = True
    except (urllib.error.URLError, OSError, ValueError, KeyError) as error:
        out["error"] = str(error)
    return out


def main(argv):
    opts = sc.parse(argv, "bench_serving", PROG)
    backend = opts.get("--backend", "sglang")
    if backend != "sglang":
        sys.exit(f"double: only --backend sglang is served by this double, got {backend}")
    name = opts.get("--dataset-name", "sharegpt")
    if name != "random":
        sys.exit(f"double: only --dataset-name random is in this double (the real one reads {name}'s file)")
    count = int(opts.get("--num-prompts", 1000))
    input_len, output_len = int(opts.get("--random-input-len", 1024)), int(opts.get("--random-output-len", 1024))
    ratio = float(opts.get("--random-range-ratio", 0.0))
    rate = float(opts.get("--request-rate", "inf"))
    rng = random.Random(int(opts.get("--seed", 1)))
    base = f"http://{opts.get('--host', '0.0.0.0')}:{opts.get('--port', '30000')}"
    api_url = base + "/generate"
    requests = []
    for _ in range(count):
        il = rng.randint(max(int(input_len * ratio), 1), input_len)
        ol = rng.randint(max(int(output_len * ratio), 1), output_len)
        requests.append((" ".join(["tok"] * il), il, ol))

    warmups = int(opts.get("--warmup-requests", 1))
    print(f"Starting warmup with {warmups} sequences...")
    first = [one_request(api_url, requests[0][0], requests[0][1], min(requests[0][2], 32)) for _ in range(warmups)]
    if warmups > 0 and not any(o["success"] for o in first):
        sys.exit(f"ValueError: Warmup failed - Please make sure benchmark arguments are correctly specified. "
                 f"Error: {first[0]['error']}")
    print(f"Warmup completed with {warmups} sequences. Starting main benchmark run...")
    if opts.get("--profile"):
        print("Starting profiler...")
        try:
            post(base + "/start_profile").close()
            print("Profiler started")
        except urllib.error.URLError:
            pass
    outputs, threads = [None] * len(requests), []
    started = time.perf_counter()
    for i, (prompt, il, ol) in enumerate(requests):
        def run(i=i, prompt=prompt, il=il, ol=ol):
            outputs[i] = one_request(api_url, prompt, il, ol)
        thread = threading.Thread(target=run)
        thread.start()
        threads.append(thread)
        if not math.isinf(rate):
            time.sleep(rng.expovariate(rate))  # get_request: np.random.exponential(1.0 / request_rate)
    for thread in threads:
        thread.join()
    if opts.get("--profile"):
        print("Stopping profiler...")
        try:
            post(base + "/stop_profile").close()
            print("Profiler stopped")
        except urllib.error.URLError:
            pass
    duration = time.perf_counter() - started

    done = [o for o in outputs if o["success"]]
    ms = lambda values, f: f(values or [0.0]) * 1000
    p = lambda values, q: sorted(values or [0.0])[min(len(values or [0.0]) - 1, int(q / 100 * len(values or [0.0])))] * 1000
    ttfts = [o["ttft"] for o in done]
    tpots = [(o["latency"] - o["ttft"]) / (o["output_len"] - 1) for o in done if o["output_len"] > 1]
    itls = [v for o in done for v in o["itl"]]
    e2e = [o["latency"] for o in done]
    total_in, total_out = sum(o["prompt_len"] for o in done), sum(o["output_len"] for o in done)
    result = {  # benchmark()'s `result` dict, key for key
        "backend": backend, "dataset_name": name, "request_rate": rate, "max_concurrency": None,
        "sharegpt_output_len": None, "random_input_len": input_len, "random_output_len": output_len,
        "random_range_ratio": ratio, "duration": duration, "completed": len(done),
        "total_input_tokens": total_in, "total_output_tokens": total_out, "total_output_tokens_retokenized": total_out,
        "request_throughput": len(done) / duration, "input_throughput": total_in / duration,
        "output_throughput": total_out / duration,
        "mean_e2e_latency_ms": ms(e2e, statistics.mean), "median_e2e_latency_ms": ms(e2e, statistics.median),
        "std_e2e_latency_ms": ms(e2e, statistics.pstdev), "p99_e2e_latency_ms": p(e2e, 99),
        "mean_ttft_ms": ms(ttfts, statistics.mean), "median_ttft_ms": ms(ttfts, statistics.median),
        "std_ttft_ms": ms(ttfts, statistics.pstdev), "p99_ttft_ms": p(ttfts, 99),
        "mean_tpot_ms": ms(tpots, statistics.mean), "median_tpot_ms": ms(tpots, statistics.median),
        "std_tpot_ms": ms(tpots, statistics.pstdev), "p99_tpot_ms": p(tpots, 99),
        "mean_itl_ms": ms(itls, statistics.mean), "median_itl_ms": ms(itls, statistics.median),
        "std_itl_ms": ms(itls, statistics.pstdev), "p95_itl_ms": p(itls, 95), "p99_itl_ms": p(itls, 99),
        "concurrency": sum(e2e) / duration, "accept_length": None,
    }
    print("\n{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="))
    print("{:<40} {:<10}".format("Backend:", backend))
    print("{:<40} {:<10}".format("Successful requests:", len(done)))
    print("{:<40} {:<10.2f}".format("Mean TTFT (ms):", result["mean_ttft_ms"]))
    print("=" * 50)
    output_file = opts.get("--output-file") or \
        f"{backend}_{datetime.now().strftime('%m%d')}_{count}_{input_len}_{output_len}.jsonl"
    with open(output_file, "a") as file:  # "Append results to a JSONL file"
        file.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
