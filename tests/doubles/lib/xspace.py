"""A small XSpace (the JAX profiler's <host>.xplane.pb) for the TPU doubles, and its trace-viewer
export as the image's xprof converter would write it.

write_xspace() encodes a real protobuf XSpace message with the field numbers of
tsl/profiler/protobuf/xplane.proto (XSpace.planes 1, hostnames 4; XPlane id 1, name 2, lines 3,
event_metadata 4 (map<int64, XEventMetadata>); XLine id 1, name 2, timestamp_ns 3, events 4;
XEvent metadata_id 1, offset_ps 2, duration_ps 3; XEventMetadata id 1, name 2). Unverified: the
field numbers are written from memory of that file, not read at a pinned commit. to_trace_json()
decodes what write_xspace() writes (any protobuf with those fields) into Chrome trace JSON:
one pid per plane, one tid per line, "X" events in microseconds.

A step is what harness/trace_check counts in an XLA trace: a host Python frame named
"$<file>:<line> step" on the "python" line, or a "StepMarker" event.
"""
import gzip
import json
import os
import time


def _varint(value):
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number, value):
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint((number << 3) | 2) + _varint(len(data)) + data


def _event_metadata(mid, name):
    return _field(1, mid) + _field(2, name)


def _plane(pid, name, lines, names):
    """lines: [(line_id, line_name, timestamp_ns, [(name, offset_ps, duration_ps)])]."""
    body = _field(1, pid) + _field(2, name)
    for line_id, line_name, timestamp_ns, events in lines:
        line = _field(1, line_id) + _field(2, line_name) + _field(3, timestamp_ns)
        for event_name, offset_ps, duration_ps in events:
            line += _field(4, _field(1, names[event_name]) + _field(2, offset_ps) + _field(3, duration_ps))
        body += _field(3, line)
    for event_name, mid in names.items():
        body += _field(4, _field(1, mid) + _field(2, _event_metadata(mid, event_name)))
    return body


def step_xspace(host, chips, steps, step_frame, collective="all-reduce", step_marker=False, step_us=2000):
    """An XSpace (bytes) for `host`: a host plane with one `step_frame` Python frame (and a StepMarker
    when `step_marker`) per step in `steps`, and one device plane per chip with a fusion and a
    `collective` per step."""
    names = {}

    def mid(name):
        return names.setdefault(name, len(names) + 1)

    start_ns = time.time_ns()
    python, device = [], []
    for index, step in enumerate(steps):
        offset = index * (step_us + 20) * 1_000_000
        python.append((step_frame, offset, step_us * 1_000_000))
        if step_marker:
            # A StepMarker spans its step, as jax.profiler.StepTraceAnnotation's does; the metrics
            # take markers under a tenth of the longest for bookkeeping, not steps.
            python.append(("StepMarker", offset, step_us * 1_000_000))
        device.append(("fusion.%d" % step, offset + 10_000_000, step_us * 600_000))
        device.append(("%s.%d" % (collective, step), offset + step_us * 700_000, step_us * 250_000))
    for name, _, _ in python + device:
        mid(name)
    space = _field(1, _plane(1, "/host:CPU", [(1, "python", start_ns, python)], names))
    for chip in range(chips):
        space += _field(1, _plane(100 + chip, "/device:TPU:%d" % chip, [(1, "XLA Ops", start_ns, device)], names))
    return space + _field(4, host)


def profile_path(directory, host):
    """<directory>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb, JAX's layout."""
    return os.path.join(directory, "plugins", "profile", time.strftime("%Y_%m_%d_%H_%M_%S"), host + ".xplane.pb")


def write_xspace(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


def _read_varint(data, pos):
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, pos


def _fields(data):
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
        elif wire == 2:
            length, pos = _read_varint(data, pos)
            value, pos = bytes(data[pos:pos + length]), pos + length
        else:
            raise ValueError("unsupported protobuf wire type %d" % wire)
        yield number, value


def to_trace_json(data):
    """The trace viewer's JSON for an XSpace (bytes), as a dict."""
    events = []
    for number, plane in _fields(data):
        if number != 1:
            continue
        pid, name, lines, names = 0, "", [], {}
        for pnum, value in _fields(plane):
            if pnum == 1:
                pid = value
            elif pnum == 2:
                name = value.decode()
            elif pnum == 3:
                lines.append(value)
            elif pnum == 4:
                entry = dict(_fields(value))
                meta = dict(_fields(entry.get(2, b"")))
                names[entry.get(1, 0)] = meta.get(2, b"").decode()
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
        for line in lines:
            fields = list(_fields(line))
            line_id = next((v for n, v in fields if n == 1), 0)
            line_name = next((v.decode() for n, v in fields if n == 2), "")
            timestamp_ns = next((v for n, v in fields if n == 3), 0)
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": line_id, "args": {"name": line_name}})
            for n, value in fields:
                if n != 4:
                    continue
                event = dict(_fields(value))
                events.append({"ph": "X", "pid": pid, "tid": line_id, "name": names.get(event.get(1, 0), "?"),
                               "ts": (timestamp_ns * 1000 + event.get(2, 0)) / 1e6,
                               "dur": event.get(3, 0) / 1e6})
    return {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True}, "traceEvents": events}


def write_trace_json_gz(path, document):
    with gzip.open(path + ".tmp", "wb") as f:
        f.write(json.dumps(document).encode())
    os.replace(path + ".tmp", path)
