"""xprof.convert.raw_to_tool_data.xspace_to_tool_data for the TPU image doubles: the "trace_viewer"
tool of an XSpace as Chrome trace JSON (a str), decoded by tests/doubles/lib/xspace.py."""
import json

import xspace


def xspace_to_tool_data(xspace_paths, tool, params):
    if tool != "trace_viewer":
        raise ValueError("this double converts to trace_viewer only, not %r" % tool)
    del params
    events = []
    for path in xspace_paths:
        with open(path, "rb") as f:
            events.extend(xspace.to_trace_json(f.read())["traceEvents"])
    document = {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True}, "traceEvents": events}
    return json.dumps(document), "application/json"
