"""The nbdkit plugin that serves a disk image through a device model.

Loaded by nbdkit's Python plugin (nbdkit python nbdplugin.py file=IMAGE
kind=disk|flash|ssd params=JSON seed=N [stats=FILE] [time_scale=X]); iowatch.mechanics.export
starts it. nbdkit embeds the system's Python, not iowatch's virtualenv, so
this file imports only the standard library and iowatch.mechanics.models
(pure, standard library only), found beside it.

Each request: the model is told of it under a lock, in arrival order, and
answers when the device completes it; the data is read or written in the
image file meanwhile (pread/pwrite, so the file's own cost hides inside the
device's), and the request returns at that time. Requests are served in
parallel (nbdkit's parallel thread model), so a model with channels, or a
disk whose write cache answers at once, sees requests in flight together.
Sleeps are short: the thread's timer slack is set to 1 us, else Linux adds up
to 50 us to each. How late the threads woke all the same (the host's scheduler,
not the device) is summed in the stats file (late_s), beside the model's own time (model_s:
each request's arrival to its due time): what a request took through the
export, less model_s, is the host's.
"""
import builtins
import ctypes
import json
import os
import sys
import threading
import time

import nbdkit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from iowatch.mechanics import models  # noqa: E402

API_VERSION = 2
PR_SET_TIMERSLACK = 29

_cfg = {"seed": "0"}
_state = {}
_lock = threading.Lock()
_libc = ctypes.CDLL(None, use_errno=True)
_slack = threading.local()


def thread_model():
    return nbdkit.THREAD_MODEL_PARALLEL


def config(key, value):
    if key not in ("file", "kind", "params", "seed", "stats", "time_scale"):
        raise RuntimeError(f"unknown parameter {key}; takes file=, kind=, params=, seed=, stats=, time_scale=")
    _cfg[key] = value


def config_complete():
    for key in ("file", "kind", "params"):
        if key not in _cfg:
            raise RuntimeError(f"{key}= is required")
    _state["fd"] = os.open(_cfg["file"], os.O_RDWR)
    size = os.fstat(_state["fd"]).st_size
    params = json.loads(_cfg["params"])
    if _cfg["kind"] == "disk":
        params.setdefault("capacity", size)
    _state["model"] = models.make(_cfg["kind"], params, int(_cfg["seed"]), float(_cfg.get("time_scale", 1)))
    _state["size"] = size
    _state["late_s"] = 0.0       # how long after their due time the sleeping threads woke, summed
    _state["model_s"] = 0.0      # the model's own time, each request's arrival to its due time, summed


def open(readonly):
    return 1


def get_size(h):
    return _state["size"]


def can_flush(h):
    return True


def can_fua(h):
    return nbdkit.FUA_NATIVE


def can_trim(h):
    return True


def can_multi_conn(h):
    return True


def _until(deadline):
    if not getattr(_slack, "set", False):
        _libc.prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0)
        _slack.set = True
    left = deadline - time.monotonic()
    if left > 0:
        time.sleep(left)
        late = time.monotonic() - deadline
        with _lock:
            _state["late_s"] += late


def _submit(op, offset, length, fua=False):
    now = time.monotonic()
    with _lock:
        due = _state["model"].submit(op, offset, length, now, fua)
        _state["model_s"] += due - now
    return due


def pread(h, buf, offset, flags):
    done = _submit(models.READ, offset, len(buf))
    n = os.preadv(_state["fd"], [buf], offset)
    if n < len(buf):
        buf[n:] = bytes(len(buf) - n)
    _until(done)


def pwrite(h, buf, offset, flags):
    done = _submit(models.WRITE, offset, len(buf), bool(flags & nbdkit.FLAG_FUA))
    os.pwrite(_state["fd"], buf, offset)
    _until(done)


def flush(h, flags):
    done = _submit(models.FLUSH, 0, 0)
    _until(done)


def trim(h, count, offset, flags):
    done = _submit(models.TRIM, offset, count)
    _until(done)


def zero(h, count, offset, flags):
    # A write of zeroes; where the guest allows a trim (mkfs, discard), what a trim costs.
    op = models.TRIM if flags & nbdkit.FLAG_MAY_TRIM else models.WRITE
    done = _submit(op, offset, count, bool(flags & nbdkit.FLAG_FUA))
    chunk = bytes(min(count, 1 << 20))
    end = offset + count
    while offset < end:
        n = min(len(chunk), end - offset)
        os.pwrite(_state["fd"], chunk[:n], offset)
        offset += n
    _until(done)


def cleanup():
    path = _cfg.get("stats")
    if path and "model" in _state:
        m = _state["model"]
        stats = {"kind": m.kind, "requests": m.counts,
                 "unit_switches": getattr(m.device, "unit_switches", None),
                 "commands": getattr(m.device, "commands", None),
                 "seed": int(_cfg["seed"]), "time_scale": m.time_scale,
                 "late_s": _state["late_s"], "model_s": _state["model_s"]}
        with builtins.open(path, "w") as f:
            json.dump(stats, f)
