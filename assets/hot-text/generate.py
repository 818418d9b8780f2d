#!/usr/bin/env python3
"""Regenerates assets/hot-text/hot-text.ld: the functions gpumon runs, placed together.

Why: the kernel maps a binary's code in blocks (64 KiB of fault-around, or a whole large folio
of up to 256 KiB), so a dashboard that runs 1.1 MB of its 4.6 MB of code, spread over the whole
text, keeps nearly all of it resident. Linked first, in one output section, the code it runs
fills about 1.4 MB and the rest is never touched. See "Performance" in the README.

How: the release binary runs under valgrind's callgrind against the fake NVML library: the
dashboard in a 200x50 tmux pane, left alone and then driven by keys (sorting, scrolling,
details, help), then `once`,
`once --json` and `log`. Every function callgrind saw executed in gpumon becomes a section
pattern. Names are made independent of the build: the crate hashes of v0 symbols
(`Cs<hash>_`) and their back-references (`B<n>_`), and the hash suffix of legacy symbols
(`17h<16 hex>E`), become `*`, so a new compiler or dependency version still matches (a
pattern can then match a few more functions than ran, never fewer). Legacy names that several
instances of one generic share keep their hash (a wildcard would take every instance). That
hash changes with the compiler and with gpumon's own metadata hash, which cargo derives from its
dependencies: adding one (even a crate already in the tree, such as itoa) left 180 of 818
patterns matching nothing and the dashboard 0.6-1 MiB larger. Those fall back to the ordinary
text until the file is regenerated, so regenerate after changing the dependencies. Each pattern takes the
function's plain and `.text.unlikely.` section (LLVM puts code run once there).

Usage (needs valgrind and tmux; builds both workspace members, without the script, in
target/hot-text first):
    python3 assets/hot-text/generate.py
Run it after large changes to what the dashboard runs; a stale file only costs memory.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Built without the script: valgrind names no function outside the `.text` section.
TARGET = os.path.join(ROOT, "target/hot-text")
BINARY = os.path.join(TARGET, "release/gpumon")
FAKE = os.path.join(TARGET, "release/libnvidia_ml.so")
OUT = os.path.join(ROOT, "assets/hot-text/hot-text.ld")
GPUS, PROCS = 8, 40  # the benchmarks' scene: 320 pids take the threaded /proc reads
DASHBOARD_SECONDS = 30
# The dashboard left alone: start-up and its first frames, then long enough for the every-30-s
# refresh of off-screen rows (src/host.rs) to count as steady, not start-up.
START_UP_SECONDS, STEADY_SECONDS = 12, 40


def scenario(path, pids):
    devices = []
    for d in range(GPUS):
        procs = [
            {"pid": pids[d * PROCS + i], "memory_mib": 100 + i, "sm_percent": i % 100}
            for i in range(PROCS)
        ]
        devices.append({
            "name": "NVIDIA H100 80GB HBM3",
            "memory_total_mib": 81559,
            "memory_reserved_mib": 529,
            "utilization_gpu": {"points": [[0, 10], [60, 90]]},
            "temperature_c": 60,
            "power_draw_w": 300,
            "power_limit_w": 700,
            "processes": procs,
        })
    with open(path, "w") as f:
        json.dump({"version": 1, "devices": devices, "faults": []}, f)


def executed(callgrind_out, binary):
    """Names of the functions of `binary` that callgrind saw run."""
    names, objects, current, seen = {}, {}, None, []
    pattern = re.compile(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$")
    with open(callgrind_out, errors="replace") as f:
        for line in f:
            m = pattern.match(line.rstrip("\n"))
            if not m:
                continue
            call, kind, idx, name = m.groups()
            table = objects if kind == "ob" else names
            if name:
                table[idx] = name
            if call:
                continue
            if kind == "ob":
                current = objects.get(idx)
            elif current and os.path.realpath(current) == os.path.realpath(binary):
                seen.append(names[idx])
    return seen


LEGACY_HASH = re.compile(r"17h[0-9a-f]{16}E$")


def pattern(symbol, shared):
    """The section pattern for `symbol`; `shared` holds the legacy names (hash cut off) that
    several functions of the binary bear: instances of one generic (`RawVec<T>::grow_one` for
    every T), told apart only by their hash. Those keep it: a wildcard would take them all."""
    if symbol.startswith("_R"):
        symbol = re.sub(r"Cs[0-9A-Za-z]+_", "Cs*_", symbol)
        return re.sub(r"B[0-9A-Za-z]*_", "B*_", symbol)
    if LEGACY_HASH.sub("", symbol) in shared:
        return symbol
    return LEGACY_HASH.sub("17h*E", symbol)


def shared_legacy_names(binary):
    names = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True,
                           check=True).stdout.split("\n")
    seen, shared = set(), set()
    for line in names:
        parts = line.split()
        if len(parts) != 3 or not LEGACY_HASH.search(parts[2]):
            continue
        name = LEGACY_HASH.sub("", parts[2])
        (shared if name in seen else seen).add(name)
    return shared


def run(binary, fake, work):
    env = dict(os.environ, GPUMON_NVML_LIB=fake, FAKE_NVML_SCENARIO=os.path.join(work, "scn.json"),
               COLUMNS="160")
    grind = ["valgrind", "--tool=callgrind", "--demangle=no", "--dump-instr=no"]
    outs = []

    def out(name):
        outs.append(os.path.join(work, f"{name}.callgrind"))
        return [f"--callgrind-out-file={outs[-1]}"]

    def dashboard(name, keys, split=False):
        sock = os.path.join(work, f"{name}.tmux")
        cmd = " ".join(grind + out(name) + [binary, "--interval", "1s"])
        final = outs[-1]
        env_args = [f"{k}={env[k]}" for k in ("GPUMON_NVML_LIB", "FAKE_NVML_SCENARIO")]
        subprocess.run(["tmux", "-S", sock, "new-session", "-d", "-x", "200", "-y", "50",
                        "env " + " ".join(env_args) + " " + cmd + " 2>/dev/null"], check=True)
        time.sleep(START_UP_SECONDS if split else DASHBOARD_SECONDS / 2)
        if split:
            # What ran so far (start-up and the first frames) goes to NAME.callgrind.1; the
            # final file then holds only what the dashboard runs from here on.
            subprocess.run(["callgrind_control", "--dump"], check=True,
                           stdout=subprocess.DEVNULL)
            outs.append(outs[-1] + ".1")
        for k in keys:
            subprocess.run(["tmux", "-S", sock, "send-keys", k], check=False)
            time.sleep(1)
        time.sleep(STEADY_SECONDS if split else DASHBOARD_SECONDS / 2)
        subprocess.run(["tmux", "-S", sock, "send-keys", "q"], check=False)
        for _ in range(60):
            if os.path.exists(final) and os.path.getsize(final) > 0:
                break
            time.sleep(0.5)
        time.sleep(2)
        subprocess.run(["tmux", "-S", sock, "kill-server"], check=False,
                       stderr=subprocess.DEVNULL)

    # The dashboard left alone first: what it runs every second leads the section, then what
    # it ran only at start (released after start-up: see src/resident.rs, so those pages stay
    # out once they are apart); then what keys bring up (sorting, scrolling, details, help);
    # then the headless commands.
    dashboard("dashboard", [], split=True)
    dashboard("dashboard-keys", ["s", "s", "Down", "Down", "Enter", "Escape", "?", "Escape",
                                 "Right", "Left", "]", "[", "End", "g"])

    for name, args in (("once", ["once"]), ("once-json", ["once", "--json"]),
                       ("log", ["log", "--count", "3", "--interval", "100ms"])):
        subprocess.run(grind + out(name) + [binary] + args, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return outs


def main():
    for tool in ("valgrind", "callgrind_control", "tmux", "nm"):
        if not shutil.which(tool):
            sys.exit(f"generate.py: needs {tool}")
    subprocess.run(["cargo", "build", "--release", "--workspace"], cwd=ROOT, check=True,
                   env=dict(os.environ, GPUMON_NO_HOT_TEXT="1", CARGO_TARGET_DIR=TARGET))
    sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(GPUS * PROCS)]
    try:
        with tempfile.TemporaryDirectory() as work:
            scenario(os.path.join(work, "scn.json"), [p.pid for p in sleepers])
            outs = run(BINARY, FAKE, work)
            patterns, functions = [], 0
            shared = shared_legacy_names(BINARY)
            for o in outs:
                for symbol in executed(o, BINARY):
                    # callgrind's own names ("(below main)") are no symbols.
                    if not re.fullmatch(r"[A-Za-z0-9_$.]+", symbol):
                        continue
                    functions += 1
                    p = pattern(symbol, shared)
                    if p not in patterns:
                        patterns.append(p)
    finally:
        for p in sleepers:
            p.kill()
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    with open(OUT, "w") as f:
        f.write("/* Generated by assets/hot-text/generate.py from a run of the dashboard, once\n")
        f.write(f"   and log ({rustc}); {len(patterns)} patterns. Linked by build.rs: the\n")
        f.write("   functions gpumon runs, together, before the rest of its code. */\n")
        f.write("SECTIONS\n{\n  .text.hot : {\n")
        for p in patterns:
            f.write(f"    *(.text.{p} .text.unlikely.{p})\n")
        f.write("  }\n}\nINSERT BEFORE .text;\n")
    print(f"{OUT}: {len(patterns)} patterns from {functions} executed functions")


if __name__ == "__main__":
    main()
