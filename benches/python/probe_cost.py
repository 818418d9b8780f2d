"""Probe cost per publish: CPU time of building and atomically writing one report, with the
stand-in torch (tests/fixtures/python) on 8 devices. Run by `cargo bench --bench probe`.

Real torch's `torch._C._cuda_memoryStats` is a host-side read of allocator counters (no CUDA
call, no sync); the stand-in reads a JSON file instead, which costs more, so this is an upper
bound for everything but that one call.
"""
import json
import os
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(root, "tests", "fixtures", "python"))

work = tempfile.mkdtemp()
state = os.path.join(work, "state.json")
with open(state, "w") as f:
    json.dump({"initialized": True, "devices": [
        {"allocated": 1 << 30, "reserved": 3 << 29, "uuid": "u%d" % i} for i in range(8)]}, f)
os.environ["FAKE_TORCH_STATE"] = state
os.environ["GPUMON_PROBE_DIR"] = work
os.environ["GPUMON_PROBE_INTERVAL"] = "3600"  # the thread must not publish during the bench

import torch  # noqa: E402  the stand-in

# Load the probe's functions without starting it for real: execute the module source with a
# patched threading.Thread.start, then reach the publish closure through a hook.
source = open(os.path.join(root, "assets", "python", "sitecustomize.py")).read()
captured = {}
import threading  # noqa: E402

orig_start = threading.Thread.start


def capture(self):
    captured["thread"] = self


threading.Thread.start = capture
namespace = {"__file__": os.path.join(work, "sitecustomize.py"), "__name__": "sitecustomize"}
exec(compile(source, "sitecustomize.py", "exec"), namespace)
threading.Thread.start = orig_start

# The loop closure holds publish(); run one iteration's body directly.
loop = captured["thread"]._target
cells = {name: cell.cell_contents for name, cell in zip(loop.__code__.co_freevars, loop.__closure__)}
publish = cells["publish"]

# A stand-in that answers from memory, like the real allocator counters.
stats = torch._C._cuda_memoryStats(0)
torch._C._cuda_memoryStats = staticmethod(lambda i: stats)
props = torch.cuda.get_device_properties(0)
torch.cuda.get_device_properties = staticmethod(lambda i: props)
torch.cuda.device_count = staticmethod(lambda: 8)

n = 2000
for _ in range(50):
    publish(torch, None)
t0 = time.process_time()
w0 = time.perf_counter()
for _ in range(n):
    publish(torch, None)
cpu = (time.process_time() - t0) / n
wall = (time.perf_counter() - w0) / n
size = os.path.getsize(os.path.join(work, "%d.json" % os.getpid()))
print("probe publish, 8 devices: %.1f us CPU, %.1f us wall per publish, one %d-byte write" % (cpu * 1e6, wall * 1e6, size))
