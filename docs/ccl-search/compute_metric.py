"""compute_metric for CCL-Search on top of ccl-harness: upstream's interface, one process.

Upstream's agent/ccl_bench_agent/compute_metric.py (at 1d257f0) starts `tools/main.py --trace
TRACE_DIR --metric NAME` once per metric of the optimization goal and reads one float from each.
This module has the same function, arguments and result, and asks `ccl-harness metrics TRACE_DIR
--reference --json` once for every metric: the CCL-Bench tools' definitions, bug for bug
(docs/metrics.md). Put this directory before the agent's on sys.path (or copy this file over
upstream's) to use it.

    result = compute_metric(run_result, optimization_goal)
    result["status"]    -> "success" | "error" | "timeout" | "metric_error"
    result["metrics"]   -> {metric_name: float, ...}
    result["score"]     -> float (sum of weight x value; inf / -inf when not a success)
    result["error_msg"] -> str | None

CCL_HARNESS names the binary (default: ccl-harness on PATH).
"""

import json
import os
import subprocess


def compute_metric(run_result, optimization_goal: dict) -> dict:
    direction = optimization_goal.get("direction", "minimize")
    bad_score = float("inf") if direction == "minimize" else float("-inf")
    if run_result.status != "success":
        return {"status": run_result.status, "error_msg": run_result.error_msg, "metrics": {}, "score": bad_score}

    metric_cfgs = optimization_goal.get("metrics", [])
    harness = os.environ.get("CCL_HARNESS", "ccl-harness")
    try:
        proc = subprocess.run([harness, "metrics", run_result.trace_dir, "--reference", "--json"],
                              capture_output=True, text=True, timeout=600)
        table = json.loads(proc.stdout).get("metrics", {}) if proc.stdout.strip() else {}
    except (OSError, subprocess.TimeoutExpired, ValueError) as e:
        return {"status": "metric_error", "error_msg": f"ccl-harness metrics failed: {e}", "metrics": {}, "score": bad_score}
    if proc.returncode != 0:
        return {"status": "metric_error", "error_msg": f"ccl-harness metrics: {proc.stderr.strip()[-400:]}",
                "metrics": {}, "score": bad_score}

    values = {}
    for mc in metric_cfgs:
        name = mc["name"]
        entry = table.get(name)
        if entry is None:
            return {"status": "metric_error", "error_msg": f"metric '{name}' failed: no such metric",
                    "metrics": values, "score": bad_score}
        if entry.get("value") is None:
            return {"status": "metric_error", "error_msg": f"metric '{name}' failed: {entry.get('why', 'no value')}",
                    "metrics": values, "score": bad_score}
        values[name] = float(entry["value"])
    score = sum(mc.get("weight", 1.0) * values[mc["name"]] for mc in metric_cfgs)
    return {"status": "success", "metrics": values, "score": score, "error_msg": None}
