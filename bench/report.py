#!/usr/bin/env python3
"""make bench: the table, from the lines bench/run.sh collected and the logs of the traced runs.

usage: report.py RESULTS CPUS

RESULTS holds one CLOCK line (bench/clock_cost.c) and one RUN line per rank of every run:
  RUN name=N rep=R mode=untraced|traced|depth4 np=P dir=LOGDIR|- rank=.. loop_calls=.. loop_ns=..
      median_ns=.. loop_cpu_ns=.. traced_calls=.. vmhwm_kib=.. cpu_process_us=.. cpu_main_us=..
"""
import glob
import os
import statistics
import struct
import sys

MPA_CHUNK_MAGIC = 0x4B43504D
MPA_CHUNK_EVENTS = 1
FILE_HEADER = struct.Struct("<8sII")  # mpa_file_header: magic, version, json_bytes
CHUNK_HEADER = struct.Struct("<IBBHIIQQ")  # mpa_chunk_header: magic, type, codec, thread, raw, stored, sync

# the targets (issue 13): per call, the writer's CPU counted; log bytes per call; resident memory per rank
TARGET_NS = 50
TARGET_DEPTH_NS = 200  # at MPIADVISE_STACK_DEPTH=4
TARGET_POLL_NS = 20  # an MPI_Test or MPI_Iprobe that finds nothing
TARGET_BYTES = 1.5  # the loops (a), (b)
TARGET_HALO_BYTES = 2  # the halo (c)
TARGET_VMHWM_MIB = 4
FIELDS = ("rank", "loop_calls", "loop_ns", "median_ns", "loop_cpu_ns", "traced_calls", "vmhwm_kib",
          "cpu_process_us", "cpu_main_us")


def parse(path):
    runs, clock = {}, {}
    with open(path) as f:
        for line in f:
            words = line.split()
            if not words:
                continue
            kv = dict(w.split("=", 1) for w in words[1:] if "=" in w)
            if words[0] == "CLOCK":
                clock = {k: float(v) for k, v in kv.items()}
            elif words[0] == "RUN":
                key = (kv["name"], int(kv["rep"]), kv["mode"])
                runs.setdefault(key, {"dir": kv["dir"], "np": int(kv["np"]), "ranks": []})
                runs[key]["ranks"].append({k: int(kv[k]) for k in FIELDS})
    return runs, clock


def log_bytes(d):
    """(total bytes of the rank-*.mpa files in d, bytes of their EVENTS payloads before compression)."""
    total = raw = 0
    for path in glob.glob(os.path.join(d, "rank-*.mpa")):
        with open(path, "rb") as f:
            data = f.read()
        total += len(data)
        if len(data) < FILE_HEADER.size:
            continue
        off = FILE_HEADER.size + FILE_HEADER.unpack_from(data, 0)[2]
        while off + CHUNK_HEADER.size <= len(data):
            magic, ctype, _codec, _thread, raw_bytes, stored, _tick, _ns = CHUNK_HEADER.unpack_from(data, off)
            if magic != MPA_CHUNK_MAGIC:
                break
            if ctype == MPA_CHUNK_EVENTS:
                raw += raw_bytes
            off += CHUNK_HEADER.size + stored
    return total, raw


def med(xs):
    return statistics.median(xs) if xs else None


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def main():
    runs, clock = parse(sys.argv[1])
    cpus = sys.argv[2] if len(sys.argv) > 2 else "?"
    reps = sorted({r for (_n, r, _m) in runs})

    def loop_ns(r):  # the slower rank's loop, from the median of its 10 timed blocks
        return max(x["median_ns"] for x in r["ranks"])

    def loop_cpu_ns(r):  # the main thread's CPU time over the loop, the larger of the ranks'
        return max(x["loop_cpu_ns"] for x in r["ranks"])

    def per_rank(r, f):  # mean over ranks
        return statistics.mean(f(x) for x in r["ranks"])

    def other_cpu_us(x):  # CPU time of every thread but the main one: the writer, Open MPI's own
        return x["cpu_process_us"] - x["cpu_main_us"]

    rows = []
    settings = (("self", "(a) 1 rank to itself", True), ("pair", "(b) 2 ranks exchanging", True),
                ("poll", "(p) 1 rank polling", True),
                ("halo", f"(c) 1-D halo, {os.environ.get('HALO_NP', '4')} ranks on {cpus} CPUs", False))
    for name, title, timed in settings:
        for mode, label in (("traced", "default"), ("depth4", "STACK_DEPTH=4")):
            c = {k: [] for k in ("untraced", "traced", "added", "ratio", "cpu", "writer", "bpc", "raw", "extra",
                                 "extra0", "extra_others")}
            calls = None
            for rep in reps:
                u, t = runs.get((name, rep, "untraced")), runs.get((name, rep, mode))
                if not u or not t:
                    continue
                calls = t["ranks"][0]["loop_calls"]
                traced_calls = per_rank(t, lambda x: x["traced_calls"])
                if timed:
                    c["untraced"].append(loop_ns(u) / calls)
                    c["traced"].append(loop_ns(t) / calls)
                    c["added"].append((loop_ns(t) - loop_ns(u)) / calls)
                    c["ratio"].append(loop_ns(t) / loop_ns(u))
                    c["cpu"].append((loop_cpu_ns(t) - loop_cpu_ns(u)) / calls)
                writer_us = per_rank(t, other_cpu_us) - per_rank(u, other_cpu_us)
                c["writer"].append(writer_us * 1000.0 / traced_calls)
                hwm_kib = per_rank(t, lambda x: x["vmhwm_kib"]) - per_rank(u, lambda x: x["vmhwm_kib"])
                c["extra"].append(hwm_kib / 1024.0)
                # rank 0 alone reads the MPI library's settings through MPI_T (libtrace/metadata.c): apart
                hwm = {x["rank"]: x["vmhwm_kib"] for x in t["ranks"]}, {x["rank"]: x["vmhwm_kib"] for x in u["ranks"]}
                others = [r for r in hwm[0] if r != 0 and r in hwm[1]]
                if 0 in hwm[0] and 0 in hwm[1] and others:
                    c["extra0"].append((hwm[0][0] - hwm[1][0]) / 1024.0)
                    c["extra_others"].append(statistics.mean(hwm[0][r] - hwm[1][r] for r in others) / 1024.0)
                total, raw = log_bytes(t["dir"])
                all_calls = sum(x["traced_calls"] for x in t["ranks"])
                if total and all_calls:
                    c["bpc"].append(total / all_calls)
                    c["raw"].append(raw / all_calls)
            row = {k: med(v) for k, v in c.items()}
            row["setting"] = f"{title}, {label}"
            row["calls"] = calls
            row["n"] = len(c["extra"])
            row["spread"] = f"{min(c['added']):.0f}..{max(c['added']):.0f}" if c["added"] else "-"
            row["name"] = name
            row["unsteady"] = {(k if k == "untraced" else label): f"{min(c[k]):.0f}..{max(c[k]):.0f}"
                               for k in ("untraced", "traced")
                               if c[k] and min(c[k]) > 0 and max(c[k]) / min(c[k]) > 1.5}
            rows.append(row)

    heads = (("setting", "", ""),
             ("untraced", "ns/call", ""),
             ("traced", "ns/call", ""),
             ("added", "ns/call", f"[<{TARGET_NS}]"),
             ("added", "min..max", ""),
             ("traced /", "untraced", ""),
             ("main CPU", "added", "ns/call"),
             ("writer", "CPU", "ns/call"),
             ("log", "B/call", f"[<{TARGET_BYTES}|{TARGET_HALO_BYTES}]"),
             ("zstd in", "B/call", ""),
             ("extra", "VmHWM MiB", f"[<{TARGET_VMHWM_MIB}]"))
    widths = (46, 8, 8, 8, 9, 8, 8, 8, 8, 7, 9)

    def line(cells):
        out = str(cells[0]).ljust(widths[0])
        for cell, w in zip(cells[1:], widths[1:]):
            out += " " + str(cell).rjust(w)
        return out.rstrip()

    rule = "-" * (sum(widths) + len(widths) - 1)
    print()
    for i in range(3):
        print(line([h[i] for h in heads]))
    print(rule)
    for r in rows:
        print(line((r["setting"], fmt(r["untraced"], ".1f"), fmt(r["traced"], ".1f"), fmt(r["added"], ".1f"),
                    r["spread"], fmt(r["ratio"], ".3f"), fmt(r["cpu"], ".1f"), fmt(r["writer"], ".1f"), fmt(r["bpc"], ".2f"),
                    fmt(r["raw"], ".1f"), fmt(r["extra"], "+.1f"))))
    print(rule)
    for name, title, timed in settings:
        spread = {}
        for r in rows:
            if r["name"] == name:
                spread.update(r["unsteady"])
        if spread:
            print(f"{'unsteady':11s}{title.split(')')[0]}) ns/call ranged "
                  + ", ".join(f"{k} {v}" for k, v in spread.items())
                  + " over the runs: other processes on the CPUs? Read its added figures with care.")
    split = [r for r in rows if r["extra0"] is not None]
    if split:
        print("%-11s" % "VmHWM" + "; ".join(
            "%s rank 0 %+.1f, the others %+.1f" % (r["setting"].split(")")[0] + ")" + (" depth 4" if "DEPTH" in r["setting"] else ""),
                                                  r["extra0"], r["extra_others"]) for r in split) + " MiB")
        print("%-11s" % "" + "rank 0 alone reads the MPI library's settings through MPI_T, once (Open MPI 4.1 opens every "
              "component for it: read just before MPI_Init, where most of that is given back before MPI takes its own); "
              "(a) and (p) are rank 0 alone.")
    n = max((r["n"] for r in rows[:4]), default=0)
    notes = (
        ("added", f"traced minus untraced loop time / calls of one rank: median and min..max of {n} "
                  "interleaved pairs. A run's"),
        ("", "loop time is the median of its 10 timed blocks, scaled to the loop. (c) is oversubscribed: "
             "not timed."),
        ("main CPU", "the main thread's CPU time over the loop, traced minus untraced, / call: not moved by "
                     "time slices lost"),
        ("", "to other processes (in (b) it includes polling while waiting for the peer)."),
        ("writer CPU", "CPU time of the other threads (the tracer's zstd writer, on the rank's core when Open "
                       "MPI binds), traced"),
        ("", "minus untraced, / call traced."),
        ("log", "every rank-*.mpa byte / every call traced. zstd in: EVENTS bytes before compression / "
                "call traced."),
        ("VmHWM", "peak resident set read after MPI_Finalize, traced minus untraced, mean over ranks, "
                  "median over the pairs."),
        ("targets", f"added under {TARGET_NS} ns per call by default, {TARGET_DEPTH_NS} at STACK_DEPTH=4, the "
                    "writer's CPU counted (on 2 ranks, (b));"),
        ("", f"log under {TARGET_BYTES} bytes per call on the loops, {TARGET_HALO_BYTES} on the halo; extra VmHWM "
             f"under {TARGET_VMHWM_MIB} MiB a rank."),
        ("", f"(p): under {TARGET_POLL_NS} ns per poll that finds nothing (100 of its 103 calls an iteration are "
             "such polls)."),
        ("reference", "Score-P's OTF2 about 24 bytes per call uncompressed; Extrae 116-195 ns per event."),
    )
    for k, v in notes:
        print(f"{k:11s}{v}")
    if clock:
        print("%-11srdtsc %.1f ns (read twice per traced call), clock_gettime %.1f ns, atomic add %.1f ns, "
              "test-and-set lock+unlock %.1f ns."
              % ("machine", clock.get("rdtsc_ns", 0), clock.get("clock_gettime_ns", 0),
                 clock.get("lock_add_ns", 0), clock.get("xchg_lock_unlock_ns", 0)))

if __name__ == "__main__":
    main()
