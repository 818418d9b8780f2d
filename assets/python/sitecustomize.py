"""gpumon's in-process probe, loaded by `gpumon run` through PYTHONPATH (the sitecustomize
pattern of ddtrace-run and opentelemetry-instrument).

Once torch has initialised CUDA in this process, a daemon thread publishes, every interval, the
caching allocator's figures per device to one small JSON file, replaced atomically, in gpumon's
private runtime directory. It never initialises CUDA, never synchronises a stream, never
allocates on the GPU, and never raises into user code. Standard library only (torch is used
only if the program imported it). Any sitecustomize the environment already had still runs.

With GPUMON_SNAPSHOT (`gpumon run --snapshot`) it also queues, on torch's own lazy CUDA
initialisation, the start of PyTorch's memory history and an out-of-memory observer that dumps a
memory snapshot beside the run's recording.
"""


def _gpumon_chain_previous_sitecustomize():
    # Run the sitecustomize this one shadows, if any, from the rest of sys.path.
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _gpumon_start_probe():
    import json
    import os
    import sys
    import threading
    import time

    directory = os.environ.get("GPUMON_PROBE_DIR")
    if not directory:
        return
    try:
        interval = max(0.05, float(os.environ.get("GPUMON_PROBE_INTERVAL", "1")))
    except ValueError:
        interval = 1.0
    run_id = os.environ.get("GPUMON_RUN_ID", "")
    pid = os.getpid()
    path = os.path.join(directory, "%d.json" % pid)
    tmp = os.path.join(directory, ".%d.json.tmp" % pid)
    # The report is written and removed under one lock, and never written again once removed:
    # the publishing thread keeps running while the interpreter runs its exit handlers, and a
    # publish that ended after the clean-up would leave the report behind.
    files = threading.Lock()
    removed = []

    def visible_devices():
        # CUDA_VISIBLE_DEVICES maps torch ordinals to physical GPUs (indices or UUIDs).
        raw = os.environ.get("CUDA_VISIBLE_DEVICES")
        if raw is None:
            return None
        return [item.strip() for item in raw.split(",") if item.strip()]

    def device_entry(torch, index, visible):
        raw_stats = getattr(torch._C, "_cuda_memoryStats", None)
        if raw_stats is not None:
            stats = raw_stats(index)  # nested dict, no flattening: the cheap path

            def get(name, pool="all", kind="current"):
                try:
                    return int(stats[name][pool][kind])
                except (KeyError, TypeError, ValueError):
                    return None

            def count(name):
                try:
                    return int(stats[name])
                except (KeyError, TypeError, ValueError):
                    return None
        else:
            flat = torch.cuda.memory_stats(index)

            def get(name, pool="all", kind="current"):
                value = flat.get("%s.%s.%s" % (name, pool, kind))
                return None if value is None else int(value)

            def count(name):
                value = flat.get(name)
                return None if value is None else int(value)

        entry = {
            "index": index,
            "allocated": get("allocated_bytes"),
            "allocated_peak": get("allocated_bytes", kind="peak"),
            "reserved": get("reserved_bytes"),
            "reserved_peak": get("reserved_bytes", kind="peak"),
            "active": get("active_bytes"),
            "active_peak": get("active_bytes", kind="peak"),
            "inactive_split": get("inactive_split_bytes"),
            "num_alloc_retries": count("num_alloc_retries"),
            "num_ooms": count("num_ooms"),
            "uuid": None,
            "physical": None,
        }
        try:
            uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
            if uuid is not None:
                text = str(uuid)
                entry["uuid"] = text if text.startswith("GPU-") else "GPU-" + text
        except Exception:
            pass
        if visible is not None and index < len(visible):
            entry["physical"] = visible[index]
        return entry

    # `gpumon run --batch N`: over the first steps, what the allocator holds between steps
    # (weights, optimizer states) and the peak of a step, for the largest batch that fits.
    try:
        batch = int(os.environ.get("GPUMON_BATCH", "0"))
    except ValueError:
        batch = 0
    steps_wanted = 3
    measured = {}  # device index -> the measure, once done
    tracking = {"depth": 0, "forwards": 0, "opt_steps": 0, "held": {}, "training": None,
                "handles": [], "done": batch <= 0}

    def allocated_now(torch):
        out = {}
        raw_stats = getattr(torch._C, "_cuda_memoryStats", None)
        for i in range(torch.cuda.device_count()):
            if raw_stats is not None:
                out[i] = int(raw_stats(i)["allocated_bytes"]["all"]["current"])
            else:
                out[i] = int(torch.cuda.memory_stats(i).get("allocated_bytes.all.current", 0))
        return out

    def finish_steps(torch):
        tracking["done"] = True
        for h in tracking["handles"]:
            try:
                h.remove()
            except Exception:
                pass
        steps = tracking["opt_steps"] if tracking["training"] else tracking["forwards"]
        for i, held in tracking["held"].items():
            try:
                entry = device_entry(torch, i, None)
                peak = entry["allocated_peak"]
                if peak is None or peak <= 0:
                    continue
                measured[i] = {"batch": batch, "steps": steps, "held": held, "peak": peak,
                               "reserved_peak": entry["reserved_peak"],
                               "training": bool(tracking["training"])}
            except Exception:
                pass

    def on_forward_pre(torch):
        def hook(module, args):
            try:
                if tracking["done"]:
                    return None
                if tracking["depth"] == 0 and torch.cuda.is_initialized():
                    tracking["forwards"] += 1
                    if tracking["training"] is None:
                        tracking["training"] = bool(torch.is_grad_enabled())
                    # Once the optimizer has stepped (its state exists), or always for
                    # inference: the least allocated at the start of a top-level forward.
                    if tracking["opt_steps"] >= 1 or not tracking["training"]:
                        for i, a in allocated_now(torch).items():
                            tracking["held"][i] = min(tracking["held"].get(i, a), a)
                tracking["depth"] += 1
            except Exception:
                tracking["done"] = True
            return None
        return hook

    def on_forward_post(torch):
        def hook(module, args, output):
            try:
                if tracking["done"]:
                    return None
                tracking["depth"] = max(0, tracking["depth"] - 1)
                if (tracking["depth"] == 0 and tracking["training"] is False
                        and tracking["forwards"] >= steps_wanted):
                    finish_steps(torch)
            except Exception:
                tracking["done"] = True
            return None
        return hook

    def on_step(torch):
        def hook(optimizer, args, kwargs):
            try:
                if tracking["done"]:
                    return None
                tracking["opt_steps"] += 1
                tracking["depth"] = 0
                if tracking["opt_steps"] > steps_wanted and tracking["held"]:
                    finish_steps(torch)
            except Exception:
                tracking["done"] = True
            return None
        return hook

    def arm_steps(torch):
        # True once the hooks are in, or once they cannot be (then nothing is measured).
        if torch is None or getattr(getattr(torch, "__spec__", None), "_initializing", False):
            return False
        try:
            module = torch.nn.modules.module
            optim = torch.optim.optimizer
            tracking["handles"] = [
                module.register_module_forward_pre_hook(on_forward_pre(torch)),
                module.register_module_forward_hook(on_forward_post(torch)),
                optim.register_optimizer_step_post_hook(on_step(torch)),
            ]
        except Exception:
            tracking["done"] = True
        return True

    # The per-step baseline: allocated and reserved per device at the same point of every
    # training step (after the optimizer's step; without one, after `backward()`; or after
    # each call of the function GPUMON_STEP_MARKER names), for gpumon to fit growth on. Bounded:
    # the last RECENT steps, and every `stride`-th step since the start (at most SPARSE points,
    # the stride doubling when full).
    marker_spec = os.environ.get("GPUMON_STEP_MARKER", "auto").strip() or "auto"
    RECENT, SPARSE = 64, 64
    MAX_REPORT = 256 * 1024  # gpumon's collect::probe::MAX_REPORT
    import collections

    baseline = {"marker": None, "step": 0, "recent": collections.deque(maxlen=RECENT),
                "sparse": [], "stride": 1, "t0": time.monotonic(),
                "off": marker_spec == "off", "failures": 0}
    baseline_lock = threading.Lock()

    # The devices this process's allocator holds memory on (reserved > 0 at the last
    # publish): only those are read at each step, since each read builds PyTorch's whole
    # statistics dict. None: all, until the first publish.
    used_devices = [None]

    def figures_now(torch):
        raw_stats = getattr(torch._C, "_cuda_memoryStats", None)
        out = {}
        indices = used_devices[0]
        if indices is None:
            indices = range(torch.cuda.device_count())
        for i in indices:
            if raw_stats is not None:
                stats = raw_stats(i)
                out[i] = (int(stats["allocated_bytes"]["all"]["current"]),
                          int(stats["reserved_bytes"]["all"]["current"]))
            else:
                flat = torch.cuda.memory_stats(i)
                out[i] = (int(flat.get("allocated_bytes.all.current", 0)),
                          int(flat.get("reserved_bytes.all.current", 0)))
        return out

    def mark_step(source):
        # The end of a step. Never raises into the program; gives up after repeated failures.
        if baseline["off"]:
            return
        try:
            if source == "backward" and baseline["marker"] == "optimizer":
                return  # the optimizer marks steps (several backward passes may make one)
            torch = sys.modules.get("torch")
            if torch is None or not torch.cuda.is_initialized():
                return
            figures = figures_now(torch)
            now = round(time.monotonic() - baseline["t0"], 4)
            with baseline_lock:
                if source != baseline["marker"]:
                    # The first optimizer step after backward passes: steps are now its own.
                    baseline["marker"] = source
                    baseline["step"] = 0
                    baseline["recent"].clear()
                    del baseline["sparse"][:]
                    baseline["stride"] = 1
                baseline["step"] += 1
                step = baseline["step"]
                point = (step, now, figures)
                baseline["recent"].append(point)
                if step % baseline["stride"] == 0:
                    sparse = baseline["sparse"]
                    sparse.append(point)
                    if len(sparse) > SPARSE:
                        baseline["stride"] *= 2
                        sparse[:] = [p for p in sparse if p[0] % baseline["stride"] == 0]
            if sites["wanted"] is not None or sites["state"] is not None:
                sites_step(torch, step)
        except Exception:
            baseline["failures"] += 1
            if baseline["failures"] >= 10:
                baseline["off"] = True

    # Where growth comes from (asked by `gpumon run` once it finds growth, through
    # `<dir>/<pid>.sites` holding the step the growth dates from): with PyTorch's memory
    # history on (--snapshot's, or turned on here for SITE_STEPS + 1 steps and off again),
    # three snapshots at step boundaries: S0, S1 one step later, S2 SITE_STEPS later. Blocks
    # live in S1 but not in S0 were allocated in that one step; those still live in S2, with
    # the same stack and no free of their address in the trace after S1, are held across
    # steps. Grouped by allocation site (the innermost frame outside torch), largest first.
    SITE_STEPS = 4
    want_path = os.path.join(directory, "%d.sites" % pid)
    sites = {"wanted": None, "state": None, "s0": None, "s1": None, "tail": None,
             "step": 0, "own": False, "seconds": 0.0, "result": None, "done_for": -1}

    def internal_frame(f):
        name = str(f.get("filename", ""))
        return ("/torch/" in name or name.startswith("torch/") or name.startswith("<")
                or not name or name == "??"
                or name.endswith((".cpp", ".cc", ".h", ".hpp", ".cu", ".c")))

    def live_blocks(snap):
        out = {}
        for seg in snap.get("segments", []):
            for b in seg.get("blocks", []):
                if b.get("state") == "active_allocated":
                    key = (seg.get("device", 0), b.get("address"), b.get("size"))
                    out[key] = b.get("frames") or []
        return out

    def trace_key(e):
        return (e.get("action"), e.get("addr"), e.get("size"), e.get("stream"))

    def take(torch):
        started = time.monotonic()
        snap = torch.cuda.memory._snapshot()
        sites["seconds"] += time.monotonic() - started
        return snap

    def history(torch, on):
        memory = torch.cuda.memory
        try:
            if on:
                memory._record_memory_history(enabled="all", context="alloc", stacks="python",
                                              max_entries=history_entries)
            else:
                memory._record_memory_history(enabled=None)
        except TypeError:
            memory._record_memory_history(bool(on), trace_alloc_max_entries=history_entries,
                                          trace_alloc_record_context=True)

    def sites_step(torch, step):
        # At a step boundary, on the program's thread. Any failure ends the round quietly.
        try:
            state = sites["state"]
            if state is None:
                # Turned on here only if off: --snapshot's, or the program's own, is left be
                # (torch._C._cuda_isHistoryEnabled, as torch's enable_history_recording does).
                enabled = getattr(torch._C, "_cuda_isHistoryEnabled", None)
                on = enabled() if enabled is not None else bool(snapshot_prefix)
                sites.update(state="s0", step=step, seconds=0.0, own=not on)
                if sites["own"]:
                    history(torch, True)
                sites["s0"] = live_blocks(take(torch))
            elif state == "s0":
                snap = take(torch)
                s0 = sites["s0"]
                sites["s1"] = {k: v for k, v in live_blocks(snap).items() if k not in s0}
                traces = snap.get("device_traces") or []
                sites["tail"] = {i: trace_key(t[-1]) for i, t in enumerate(traces) if t}
                sites.update(state="s1", step=step, s0=None)
            elif state == "s1" and step >= sites["step"] + SITE_STEPS:
                snap = take(torch)
                if sites["own"]:
                    history(torch, False)
                freed = set()
                for i, trace in enumerate(snap.get("device_traces") or []):
                    tail = sites["tail"].get(i)
                    start = 0
                    if tail is not None:
                        for j in range(len(trace) - 1, -1, -1):
                            if trace_key(trace[j]) == tail:
                                start = j + 1
                                break
                    for e in trace[start:]:
                        if e.get("action") in ("free_requested", "free_completed"):
                            freed.add((i, e.get("addr")))
                now_live = live_blocks(snap)
                groups = {}
                for key, frames in sites["s1"].items():
                    if now_live.get(key) != frames or (key[0], key[1]) in freed or not frames:
                        continue
                    own = [f for f in frames if not internal_frame(f)]
                    f = own[0] if own else frames[0]
                    site = (key[0], str(f.get("filename", "")), int(f.get("line", 0) or 0),
                            str(f.get("name", "")))
                    g = groups.setdefault(site, [0, 0])
                    g[0] += 1
                    g[1] += int(key[2] or 0)
                ranked = sorted(groups.items(), key=lambda kv: -kv[1][1])
                result = {}
                for (device, filename, line, name), (count, size) in ranked:
                    entry = result.setdefault(device, {
                        "step": sites["step"], "held_steps": SITE_STEPS,
                        "seconds": round(sites["seconds"], 6), "own_history": sites["own"],
                        "sites": []})
                    if len(entry["sites"]) < 8:
                        entry["sites"].append({"file": filename[-300:], "line": line,
                                               "name": name[-100:], "blocks": count,
                                               "bytes": size})
                sites.update(result=result, state=None, s1=None, tail=None,
                             done_for=sites["wanted"], wanted=None)
                try:
                    os.unlink(want_path)
                except OSError:
                    pass
        except Exception:
            if sites["own"]:
                try:
                    history(torch, False)
                except Exception:
                    pass
            sites.update(state=None, s0=None, s1=None, tail=None, wanted=None,
                         done_for=sites["wanted"] if sites["wanted"] is not None else -1)

    def check_wanted():
        # On the publishing thread: has `gpumon run` asked (again) for the sites?
        if sites["wanted"] is not None or sites["state"] is not None:
            return
        try:
            with open(want_path) as f:
                since = int(f.read(32).strip() or "0")
        except (OSError, ValueError):
            return
        if since > sites["done_for"]:
            sites["wanted"] = since

    def baseline_entries():
        # Per device: {"marker", "step", "recent": [[step, t, allocated, reserved]…], "sparse"}.
        with baseline_lock:
            if baseline["marker"] is None:
                return {}
            marker, step = baseline["marker"], baseline["step"]
            recent, sparse = list(baseline["recent"]), list(baseline["sparse"])
        out = {}
        for i in sorted({i for p in recent for i in p[2]}):
            def column(points):
                return [[p[0], p[1], p[2][i][0], p[2][i][1]] for p in points if i in p[2]]
            out[i] = {"marker": marker, "step": step, "recent": column(recent),
                      "sparse": column(sparse)}
        return out

    def on_optimizer_step(optimizer, args, kwargs):
        mark_step("optimizer")

    def wrap(fn, source):
        import functools

        @functools.wraps(fn)
        def marked(*args, **kwargs):
            result = fn(*args, **kwargs)
            mark_step(source)
            return result

        marked.__gpumon_marked__ = True
        return marked

    def arm_baseline(torch):
        # True once the markers are in (or cannot be). "auto": PyTorch's global optimizer
        # step hook (2.0+) and `torch.autograd.backward`, which `Tensor.backward` calls;
        # "MODULE:QUALNAME": that function, once its module is imported and defines it.
        if baseline["off"]:
            return True
        if marker_spec != "auto":
            module_name, _, qualname = marker_spec.partition(":")
            module = sys.modules.get(module_name)
            if module is None or not qualname:
                return not qualname
            owner, parts = module, qualname.split(".")
            for part in parts[:-1]:
                owner = getattr(owner, part, None)
                if owner is None:
                    return False
            fn = getattr(owner, parts[-1], None)
            if not callable(fn):
                return False
            if not getattr(fn, "__gpumon_marked__", False):
                setattr(owner, parts[-1], wrap(fn, marker_spec))
            return True
        if torch is None or getattr(getattr(torch, "__spec__", None), "_initializing", False):
            return False
        try:
            torch.optim.optimizer.register_optimizer_step_post_hook(on_optimizer_step)
        except Exception:
            pass
        try:
            autograd = torch.autograd
            if not getattr(autograd.backward, "__gpumon_marked__", False):
                autograd.backward = wrap(autograd.backward, "backward")
        except Exception:
            pass
        return True

    def publish(torch, visible):
        devices = [device_entry(torch, i, visible) for i in range(torch.cuda.device_count())]
        used_devices[0] = [e["index"] for e in devices if (e["reserved"] or 0) > 0]
        steps = baseline_entries()
        check_wanted()
        held = sites["result"] or {}
        for entry in devices:
            if entry["index"] in held:
                entry["sites"] = held[entry["index"]]
            if entry["index"] in measured:
                entry["steps"] = measured[entry["index"]]
            if entry["index"] in steps:
                entry["baseline"] = steps[entry["index"]]
        report = {
            "version": 1,
            "pid": pid,
            "ppid": os.getppid(),
            "run_id": run_id,
            "time": time.time(),
            "interval": interval,
            "framework": "pytorch",
            "torch_version": str(getattr(torch, "__version__", "")),
            "devices": devices,
        }
        data = json.dumps(report, separators=(",", ":")).encode()
        if len(data) > MAX_REPORT:
            # gpumon refuses a larger report: the split matters more than the steps' figures.
            for entry in devices:
                entry.pop("baseline", None)
                entry.pop("sites", None)
            data = json.dumps(report, separators=(",", ":")).encode()
        with files:
            if removed:
                return
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, path)

    # `gpumon run --snapshot`: PyTorch's memory history from CUDA's initialisation on, and at
    # each out-of-memory error a snapshot (`torch.cuda.memory._snapshot()`, pickled as
    # `_dump_snapshot` does: pytorch.org/memory_viz opens it) at GPUMON_SNAPSHOT.<pid>.
    snapshot_prefix = os.environ.get("GPUMON_SNAPSHOT")
    # The history is a ring of this many alloc/free events (PyTorch's docs use 100000); only
    # Python frames, and stacks for allocations only, which is the cheap end of its options.
    history_entries = 100000

    def start_history(torch):
        # Runs inside torch.cuda's lazy initialisation (queued with _lazy_call), after the
        # program itself initialised CUDA; it must never raise there.
        try:
            memory = torch.cuda.memory
            try:
                memory._record_memory_history(
                    enabled="all", context="alloc", stacks="python", max_entries=history_entries
                )
                mode = "all,alloc,python"
            except TypeError:
                # PyTorch 2.0: the boolean form.
                memory._record_memory_history(
                    True, trace_alloc_max_entries=history_entries, trace_alloc_record_context=True
                )
                mode = "legacy"
        except Exception:
            mode = None

        def on_oom(device, alloc, device_limit, device_free):
            # Called by the allocator just before it raises OutOfMemoryError, after it freed its
            # empty segments and retried.
            try:
                import pickle

                started = time.monotonic()
                snapshot = torch.cuda.memory._snapshot()
                base = "%s.%d.snapshot" % (snapshot_prefix, pid)
                with open(base + ".pickle.tmp", "wb") as f:
                    pickle.dump(snapshot, f)
                    size = f.tell()
                os.replace(base + ".pickle.tmp", base + ".pickle")
                meta = {
                    "device": int(device),
                    "request": int(alloc),
                    "device_free": int(device_free),
                    "device_limit": int(device_limit),
                    "time": time.time(),
                    "seconds": time.monotonic() - started,
                    "bytes": size,
                    "history": mode,
                    "torch_version": str(getattr(torch, "__version__", "")),
                }
                with open(base + ".json.tmp", "w") as f:
                    json.dump(meta, f)
                os.replace(base + ".json.tmp", base + ".json")
            except Exception:
                pass

        try:
            torch._C._cuda_attach_out_of_memory_observer(on_oom)
        except Exception:
            pass

    def arm_snapshot(torch):
        # True once armed, or once it is clear this torch cannot be: never initialise CUDA
        # (`_record_memory_history` would), queue the start on torch's own lazy initialisation.
        if torch is None or getattr(getattr(torch, "__spec__", None), "_initializing", False):
            return False
        lazy_call = getattr(getattr(torch, "cuda", None), "_lazy_call", None)
        if lazy_call is not None:
            lazy_call(lambda: start_history(torch))
        return True

    def loop():
        visible = visible_devices()
        failures = 0
        armed = not snapshot_prefix
        hooked = tracking["done"]
        marking = baseline["off"]
        due = time.monotonic() + interval
        while True:
            if not armed:
                try:
                    armed = arm_snapshot(sys.modules.get("torch"))
                except Exception:
                    armed = True
            if not hooked:
                try:
                    hooked = arm_steps(sys.modules.get("torch"))
                except Exception:
                    hooked = True
            if not marking:
                try:
                    marking = arm_baseline(sys.modules.get("torch"))
                except Exception:
                    marking = True
            # Step marking needs no haste: the first steps are the warm-up.
            armed_all = armed and hooked
            # Until torch is imported and armed, look for it every 50 ms, so that the history
            # starts with the program's first allocation.
            wait = due - time.monotonic()
            time.sleep(max(0.0, wait if armed_all else min(wait, 0.05)))
            if time.monotonic() < due:
                continue
            due += interval
            if due < time.monotonic():
                due = time.monotonic() + interval
            try:
                torch = sys.modules.get("torch")
                # Only after the program initialised CUDA itself: never cause that.
                if torch is None or not torch.cuda.is_initialized():
                    continue
                publish(torch, visible)
                failures = 0
            except Exception:
                failures += 1
                if failures >= 10:
                    return  # keep out of the program's way for good

    def cleanup():
        with files:
            removed.append(True)
            for name in (path, tmp, want_path):
                try:
                    os.unlink(name)
                except OSError:
                    pass

    import atexit

    atexit.register(cleanup)
    thread = threading.Thread(target=loop, name="gpumon-probe", daemon=True)
    thread.start()


try:
    _gpumon_start_probe()
except Exception:
    pass

try:
    _gpumon_chain_previous_sitecustomize()
except Exception:
    # The chained sitecustomize's own errors are the program's business: show them as Python
    # would, but keep running.
    import traceback

    traceback.print_exc()
