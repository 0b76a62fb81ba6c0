#!/usr/bin/python3
"""make bench, the HTML report at scale: a synthetic run of RANKS ranks (build/bin/mpiadvise-synth, real
log files through the tracer's codec), reported with mpiadvise report --format html, the page opened in
headless Chromium (tests/browser_check.py). Prints, over REPEATS runs (median, min..max): the report's
time and peak memory, the page's size, and the time from loading the page to its charts drawn, against
the targets of a 1024-rank run (under 5 s in the browser, under 5 MB). Measures and prints; asserts
nothing.

Environment: BUILD (default build), BENCH_HTML_RANKS (1024), BENCH_HTML_EVENTS (events per rank, 2000),
BENCH_HTML_PATTERN (halo), BENCH_HTML_REPEATS (3), BENCH_KEEP=1 keeps the logs and pages.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = os.environ.get("BUILD", "build")
build = build if os.path.isabs(build) else os.path.join(root, build)
mpiadvise = os.path.join(build, "bin", "mpiadvise")
synth = os.path.join(build, "bin", "mpiadvise-synth")
ranks = int(os.environ.get("BENCH_HTML_RANKS", "1024"))
events = int(os.environ.get("BENCH_HTML_EVENTS", "2000"))
pattern = os.environ.get("BENCH_HTML_PATTERN", "halo")
repeats = int(os.environ.get("BENCH_HTML_REPEATS", "3"))

for f in (mpiadvise, synth):
    if not os.access(f, os.X_OK):
        sys.exit("bench: %s is missing; build first (make BUILD=%s)" % (f, build))
if not os.access("/usr/bin/chromium", os.X_OK):
    sys.exit("bench: /usr/bin/chromium is missing (scripts/deps.sh installs it)")

work = tempfile.mkdtemp(prefix="mpiadvise-bench-html-", dir=os.path.join(build))
logs = os.path.join(work, "logs")
started = time.monotonic()
subprocess.run([synth, "--ranks", str(ranks), "--events", str(events), "--pattern", pattern, "-o", logs],
               check=True, stdout=subprocess.DEVNULL)
synth_s = time.monotonic() - started
log_bytes = sum(os.path.getsize(os.path.join(logs, f)) for f in os.listdir(logs))


report_s, report_mib, page_mb, render_s, problems = [], [], [], [], []
for k in range(repeats):
    page = os.path.join(work, "report-%d.html" % k)
    t0 = time.monotonic()
    # /usr/bin/time -f %M: the report's own peak resident set
    r = subprocess.run(["/usr/bin/time", "-f", "%M", mpiadvise, "report", logs, "--format", "html", "-o", page],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    report_s.append(time.monotonic() - t0)
    if r.returncode != 0:
        sys.exit("bench: mpiadvise report failed: " + r.stderr.strip())
    report_mib.append(int(r.stderr.strip().splitlines()[-1]) / 1024)
    page_mb.append(os.path.getsize(page) / 1e6)
    b = subprocess.run(["/usr/bin/python3", os.path.join(root, "tests", "browser_check.py"), page,
                        os.path.join(work, "report-%d.png" % k)], capture_output=True, text=True)
    if b.returncode != 0:
        sys.exit("bench: the browser could not open the page: " + b.stderr.strip()[-400:])
    seen = json.loads(b.stdout)
    if not seen["ready"] or seen["console"]:
        problems.append("run %d: ready %s, console %s" % (k, seen["ready"], seen["console"][:2]))
    render_s.append(seen["rendered_s"])


def spread(v, fmt):
    return (fmt + " (" + fmt + ".." + fmt + ")") % (statistics.median(v), min(v), max(v))


print("report --format html at scale: %d ranks x %d events (%s), %.1f MiB of logs written in %.1f s by mpiadvise-synth"
      % (ranks, events, pattern, log_bytes / 2**20, synth_s))
print("  %d runs each, median (min..max); load average %s" % (repeats, " ".join(open("/proc/loadavg").read().split()[:3])))
print("  mpiadvise report --format html   %s s, peak %s MiB" % (spread(report_s, "%.2f"), spread(report_mib, "%.0f")))
print("  the page                          %s MB   [target: under 5 MB]" % spread(page_mb, "%.2f"))
print("  Chromium, load to charts drawn    %s s    [target: under 5 s]" % spread(render_s, "%.2f"))
for p in problems:
    print("  problem: " + p)
if os.environ.get("BENCH_KEEP") == "1":
    print("  logs and pages kept in " + work)
else:
    shutil.rmtree(work, ignore_errors=True)
