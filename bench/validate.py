#!/usr/bin/env python3
"""make validate: the LogGPS replay against real runs of real MPI codes. A benchmark: it prints figures and
asserts nothing.

For each MPI (Open MPI and MPICH, where built), application, transport and rank count (2 and 4), REPS
traced runs, each reported by mpiadvise with the parameter set this machine's calibration gives for that
MPI and transport (mpiadvise calibrate --runs 5 at the start, between 2 ranks: each size's time the median
of the runs of the benchmark at the middle run's speed; with CALIBRATIONS more than 1, that many calibrations and each parameter
the median of theirs). Quick calibrations are not enough here: one of Open MPI's shared memory on a quiet
machine gave Osl 0.368 ns/B where three more gave 0.164-0.188, and every halo row over vader then missed by
+47%; the median of three quick ones priced the CMA protocol's bytes at 0.25 ns/B where --runs 3 gave
0.12-0.13 (shipped set), and the halo rows over vader missed by +28 and +40%. Five runs, not three: this
machine's messages go at two or three speeds that hold for seconds (mpiadvise-calibrate(1)), the set lists
each speed its runs saw, and a report replays a run at the listed speed closest to it; with three runs all
three fell at the slower speed in one validate of four, and its halo rows over vader then missed by +59%
and +69% at the faster.
The transports: TCP and shared memory, i.e. Open MPI's ob1 over btl tcp or vader, and MPICH's ch4 over
UCX with UCX_TLS=tcp,self or sm,self. A row: the speed of the runs' messages against the set's ("speed": the
factor by which the report scaled the set to the round trips ranks 0 and 1 timed inside each run,
libmpiadvise(7) MPIADVISE_PROBE; the median over the runs; 1.25: messages took 25% longer than the set
prices them), the measured run time (median, and the range over the runs), the predicted one, the replay's
error (median over the runs, and its range) and the same at the set's own speed (mpiadvise report
--at-set-speed: what the error was before the tracer timed the run's messages). Then the advice of the run
whose measured time is the median: an eager limit S is applied to REPS new runs as the advice says (--mca
for Open MPI, the environment variable for MPICH), a program change where the program takes it as an
argument (examples/pipeline.c), each new run beside one more of the unchanged program (the two in turn:
this machine's speed drifts over minutes, and a rerun compared with the first runs measured the drift as
much as the change: the halo's S = 262144 realised -24% in one table, 160% in another); the row says the
time the what-if predicted for the changed run, the median measured one and the unchanged runs' beside
it, the what-if's error against the changed runs, the same error with the what-if made again at the speed
the changed runs went at ("at rerun speed": the median run reported with --speed set to the median of
their params.run_speed.factor and --compute-factor to the median of their computation between MPI calls
over its own; the what-if replays the base run at its speeds and the reruns go at theirs, and on this
machine the two differ by up to 30%, in messages and in computation), and the share of the predicted cut that the change
realised against the unchanged runs beside it. Each application's rows are printed as it is measured
("measured: ...") and results.json rewritten, so that a run stopped half-way keeps its figures; the table
follows at the end. An application that hung twice (MPICH 4.0.2 over UCX, 4 ranks on 2 cores) ends that
MPI, transport and rank count: the applications after it there are rows that say so.

Applications: our examples (halo with 128 KiB and with 8 KiB messages, gauss, pipeline); the PETSc tutorials KSP ex2 (CG on a 2-D Laplacian)
and SNES ex5 (Bratu on a DMDA), built from libpetsc3.18-dev-examples; MEEP on a small 2-D waveguide
(bench/validate/waveguide.ctl); ABINIT (the Debian packages abinit and abinit-data) on bulk silicon, an
SCF ground state with 60 k-points shared between the ranks (bench/validate/abinit-si.abi; each run in an
empty working directory). A missing package is a row that says so, and so is a program linked against
the other MPI (Debian builds PETSc, MEEP and ABINIT for Open MPI only).

Environment: BUILD (build), VALIDATE_REPS (3), VALIDATE_CALIBRATIONS (1), VALIDATE_RANKS (2,4: the rank counts; 4 ranks on 2 cores
share them), VALIDATE_MPIS (openmpi,mpich: those built), VALIDATE_ONLY (comma-separated application
names), VALIDATE_TRANSPORTS (tcp,shm; vader is shm), the eager-limit sweep runs over every transport
where the report may advise raising S (Open MPI's TCP, MPICH's UCX over TCP and over shared memory: over
vader it advises none), and alone with VALIDATE_ONLY=sweep), MPIRUN_OPENMPI (mpirun.openmpi), MPIRUN_MPICH (mpirun.mpich),
BENCH_KEEP=1 keeps the logs (and ABINIT's working directories) in $BUILD/validate.
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(os.path.join(ROOT, os.environ.get("BUILD", "build")))
MPIADVISE = os.path.join(BUILD, "bin", "mpiadvise")
REPS = int(os.environ.get("VALIDATE_REPS", "3"))
CALIBRATIONS = max(1, int(os.environ.get("VALIDATE_CALIBRATIONS", "1")))
NPS = [int(n) for n in os.environ.get("VALIDATE_RANKS", "2,4").split(",") if n.strip()]
MPIRUN = {"openmpi": os.environ.get("MPIRUN_OPENMPI", "mpirun.openmpi"),
          "mpich": os.environ.get("MPIRUN_MPICH", "mpirun.mpich")}
OUT = os.path.join(BUILD, "validate")
RUN_TIMEOUT = 300
PETSC_EXAMPLES = "/usr/share/petsc/3.18/share/petsc/examples/src"
ABINIT_PSEUDO = "/usr/share/abinit/psp/Pseudodojo_nc_sr_04_pw_standard_psp8/Si.psp8"
# applications that write their output files into the working directory: each run gets an empty one
OWN_CWD = {"abinit"}

# (MPI, transport) -> the name the table gives it, launcher options, environment
TRANSPORTS = {
    ("openmpi", "tcp"): ("tcp", ["--mca", "pml", "ob1", "--mca", "btl", "self,tcp"], {}),
    ("openmpi", "shm"): ("vader", ["--mca", "pml", "ob1", "--mca", "btl", "self,vader"], {}),
    ("mpich", "tcp"): ("ucx-tcp", [], {"UCX_TLS": "tcp,self"}),
    ("mpich", "shm"): ("ucx-sm", [], {"UCX_TLS": "sm,self"}),
}
MPI_NAME = {"openmpi": "Open MPI", "mpich": "MPICH"}


class Setup:
    """How one application runs on one MPI and transport: launcher options and environment beyond the
    transport's (an eager limit: --mca for Open MPI, UCX_RNDV_THRESH for MPICH)."""

    def __init__(self, mpi, transport, opts=(), env=None):
        self.mpi, self.transport = mpi, transport
        self.opts, self.env = list(opts), dict(env or {})

    @property
    def name(self):
        return TRANSPORTS[(self.mpi, self.transport)][0]

    def launcher(self, np=2):
        _, opts, _ = TRANSPORTS[(self.mpi, self.transport)]
        if self.mpi == "openmpi":
            root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
            return [MPIRUN["openmpi"], *root, "--oversubscribe", "-np", str(np), *opts, *self.opts]
        return [MPIRUN["mpich"], "-np", str(np), *opts, *self.opts]

    def environ(self):
        env = dict(os.environ)
        env.update(TRANSPORTS[(self.mpi, self.transport)][2])
        env.update(self.env)
        return env

    def with_eager_limit(self, advice):
        """This setup with an eager-limit advice applied as the advice says."""
        s = Setup(self.mpi, self.transport, self.opts, self.env)
        if self.mpi == "openmpi":
            name = advice["setting"]
            if name in s.opts:
                k = s.opts.index(name)
                del s.opts[k - 1:k + 2]  # --mca NAME VALUE
            s.opts += ["--mca", name, str(advice["value"])]
        else:
            name, _, value = advice["env"].partition("=")
            s.env[name] = value
        return s


def run(cmd, timeout=None, **kw):
    """The command in a session of its own: on a timeout the whole job is killed, mpirun and its ranks too
    (a hung MPICH job's ranks, left behind, spin on both CPUs and slow every later run)."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                          start_new_session=True, **kw) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.communicate()
            raise
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def linked_mpi(exe):
    """openmpi or mpich: the MPI library a program is linked against, as ldd shows it (None: neither)."""
    out = run(["ldd", exe]).stdout
    if "libmpi.so.40" in out:
        return "openmpi"
    if "libmpich.so" in out or "libmpi.so.12" in out:
        return "mpich"
    return None


# ---- the applications -------------------------------------------------------------------------------------
def build_petsc(name, source):
    """Builds a PETSc tutorial; returns the program's path, or None and why not."""
    src = os.path.join(PETSC_EXAMPLES, source)
    if not os.path.exists(src):
        return None, "libpetsc3.18-dev-examples is not installed"
    exe = os.path.join(OUT, "programs", name)
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        os.makedirs(os.path.dirname(exe), exist_ok=True)
        flags = run(["pkg-config", "--cflags", "--libs", "PETSc"])
        if flags.returncode != 0:
            return None, "pkg-config finds no PETSc (petsc-dev is not installed)"
        cc = run(["mpicc", "-O2", "-g", "-o", exe, src, *flags.stdout.split(), "-lm"])
        if cc.returncode != 0:
            return None, "mpicc failed: " + cc.stderr.strip().splitlines()[-1]
    return exe, None


def applications(mpi):
    """(name, argv or None, why not, setup(transport) -> (launcher options, environment) or None where the
    application does not run on that transport, program changes)"""
    ex = os.path.join(BUILD, mpi, "examples")

    def paper_limit(t):  # gauss: pivot rows of up to 8200 bytes above a 1 KiB limit, over TCP only
        if t != "tcp":
            return None
        return (["--mca", "btl_tcp_eager_limit", "1024"], {}) if mpi == "openmpi" else ([], {"UCX_RNDV_THRESH": "1024"})

    def anywhere(t):
        return [], {}

    apps = [
        ("gauss", [os.path.join(ex, "gauss"), "1024"], None, paper_limit, {}),
        ("halo", [os.path.join(ex, "halo"), "16384", "200"], None, anywhere, {}),
        # 8 KiB messages: over Open MPI's shared memory above the FIFO's 4040 bytes, by the CMA rendezvous
        # whose fixed cost the [large] table prices (without it this run was predicted 53% short)
        ("halo-8k", [os.path.join(ex, "halo"), "1024", "2000"], None, anywhere, {}),
        # the same exchanges with each message packed into a buffer just before its send, as calibrate's
        # round trips send (data just written); the plain halo's second send reads cells already read,
        # which over shared memory costs less (share/params/openmpi-vader.toml)
        ("halo-packed", [os.path.join(ex, "halo"), "16384", "200", "pack"], None, anywhere, {}),
        ("halo-8k-packed", [os.path.join(ex, "halo"), "1024", "2000", "pack"], None, anywhere, {}),
        ("pipeline", [os.path.join(ex, "pipeline"), "131072", "40", "2"], None, anywhere,
         {"nonblocking_send": lambda a: ["isend"], "split_messages": lambda a: ["split:%d" % a["chunk_bytes"]]}),
    ]
    real = []
    exe, why = build_petsc("petsc-ksp-ex2", "ksp/ksp/tutorials/ex2.c")
    real.append(("petsc-ksp-ex2", exe and [exe, "-m", "300", "-n", "300", "-ksp_type", "cg", "-pc_type", "jacobi"], why))
    exe, why = build_petsc("petsc-snes-ex5", "snes/tutorials/ex5.c")
    real.append(("petsc-snes-ex5", exe and [exe, "-da_grid_x", "150", "-da_grid_y", "150"], why))
    meep = shutil.which("meep")
    real.append(("meep-waveguide", meep and [meep, os.path.join(ROOT, "bench", "validate", "waveguide.ctl")],
                 None if meep else "meep-openmpi is not installed"))
    abinit = shutil.which("abinit")
    real.append(("abinit", abinit and [abinit, os.path.join(ROOT, "bench", "validate", "abinit-si.abi")],
                 "abinit is not installed" if not abinit else
                 None if os.path.exists(ABINIT_PSEUDO) else "abinit-data is not installed"))
    for name, argv, why in real:
        if argv and not why:
            linked = linked_mpi(argv[0])
            if linked != mpi:
                why = "%s is linked against %s" % (os.path.basename(argv[0]), MPI_NAME.get(linked, "another MPI"))
        apps.append((name, argv, why, anywhere, {}))
    return apps


# ---- traced runs and their reports ---------------------------------------------------------------------------
def traced(name, argv, setup, params, tag, np=2, at_set_speed=False, keep=False):
    """One traced run and its report (JSON). A run that outlives RUN_TIMEOUT is run again, once: MPICH 4.0.2
    over UCX hangs in MPI_Finalize now and then, traced or not. keep: its logs stay (result["dir"]) for the
    caller to report again and remove (drop_logs)."""
    for attempt in (1, 2):
        d = os.path.join(OUT, "runs", "%s-%s-%s-%s-%d" % (name, setup.mpi, setup.name, tag, time.monotonic_ns()))
        cwd = OUT
        if name in OWN_CWD:
            cwd = d + ".cwd"
            os.makedirs(cwd)
        try:
            r = run([MPIADVISE, "run", "--dir", d, "--", *setup.launcher(np), *argv], cwd=cwd, env=setup.environ(),
                    timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            r = None
        if cwd != OUT and os.environ.get("BENCH_KEEP") != "1":
            shutil.rmtree(cwd, ignore_errors=True)
        if r is not None:
            break
        shutil.rmtree(d, ignore_errors=True)
        print("  (%s over %s: a run hung past %d s; %s)" % (name, setup.name, RUN_TIMEOUT,
              "running it again" if attempt == 1 else "giving up"), flush=True)
    if r is None:
        raise RuntimeError("%s hung twice (more than %d s)" % (" ".join(argv), RUN_TIMEOUT))
    if r.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (" ".join(argv), r.returncode, r.stderr.strip()[-400:]))
    rep = run([MPIADVISE, "report", "--format", "json", "--params", params, d])
    if rep.returncode != 0:
        raise RuntimeError("mpiadvise report %s failed: %s" % (d, rep.stderr.strip()))
    result = json.loads(rep.stdout)
    if at_set_speed:  # the same run replayed at the set's own speed, its error beside the scaled one's
        own = run([MPIADVISE, "report", "--format", "json", "--at-set-speed", "--params", params, d])
        if own.returncode != 0:
            raise RuntimeError("mpiadvise report --at-set-speed %s failed: %s" % (d, own.stderr.strip()))
        result["at_set_speed_error"] = json.loads(own.stdout)["model"]["error"]
    result["dir"] = d
    if not keep:
        drop_logs([result])
    return result


def drop_logs(results):
    if os.environ.get("BENCH_KEEP") != "1":
        for r in results:
            shutil.rmtree(r["dir"], ignore_errors=True)


def whatif_at_speed(base, params, advice, reruns):
    """The what-if of one piece of advice made again at the speed its reruns went at: the base run reported with
    --speed set to the median of the reruns' own message factors (params.run_speed) and --compute-factor to
    the median of their computation (efficiency.mean_computation_ns, the time between MPI calls) over the
    base run's, the same advice found in it (its kind and value, or its kind and call sites), given or
    weighed and left. A what-if is made at the speeds of the run it replays and the reruns go at theirs;
    compared so, the machine's drift between the two jobs is out of the what-if's error (gauss's reruns
    computed 20-31% slower than the base runs minutes before them in two tables). (None, None, None) when a
    rerun has no factor or the advice is not weighed at those speeds."""
    factors = [r["params"]["run_speed"]["factor"] for r in reruns
               if r["params"].get("run_speed", {}).get("applied")]
    if len(factors) != len(reruns):
        return None, None, None
    factor = statistics.median(factors)

    def computation(report):
        return report.get("efficiency", {}).get("mean_computation_ns", 0)
    base_comp = computation(base)
    compute = statistics.median(computation(r) for r in reruns) / base_comp if base_comp > 0 else 1.0
    compute = min(100.0, max(0.01, compute))
    rep = run([MPIADVISE, "report", "--format", "json", "--speed", "%.6g" % factor, "--compute-factor",
               "%.6g" % compute, "--params", params, base["dir"]])
    if rep.returncode != 0:
        raise RuntimeError("mpiadvise report --speed %.6g --compute-factor %.6g %s failed: %s" %
                           (factor, compute, base["dir"], rep.stderr.strip()))

    def key(a):
        return (a["kind"], a.get("value"), tuple(s.get("text") for s in a.get("sites", [])))
    there = json.loads(rep.stdout)
    same = [b for b in there["advice"] + there.get("considered", []) if key(b) == key(advice)]
    return factor, compute, same[0]["predicted_ns"] if same else None


def raised_limit(setup, k):
    """setup with its library's eager limit raised so that k-byte messages go eager: Open MPI's TCP counts
    its 56-byte header in btl_tcp_eager_limit; UCX_RNDV_THRESH=N sends up to N - 1 bytes eagerly
    (analyzer/run_facts.cpp), and the report advises the power of two above the size, as here."""
    return setup.with_eager_limit({"setting": "btl_tcp_eager_limit", "value": k + 56, "env": "UCX_RNDV_THRESH=%d" % (2 * k)})


# where the report may advise a larger S (over Open MPI's vader it advises none: analyzer/advice.cpp)
SWEPT = (("openmpi", "tcp"), ("mpich", "tcp"), ("mpich", "shm"))


def sweep_agreement(predicted, measured):
    """Whether a what-if's change and the real one agree in sign (a predicted change under 1% is none). Of the two ways to disagree, a predicted gain that the real runs reverse is the one that would
    mislead (the report would advise it); a predicted loss where the runs gained costs a missed saving."""
    if (predicted < 0) == (measured < 0) or abs(predicted) < 0.01:
        return "yes"
    return "NO: a predicted gain the runs reverse" if predicted < 0 else "no: a predicted loss the runs did not see"


def eager_sweep(setup, params):
    """Eager is not free: the halo example at message sizes from 128 KiB to 2 MiB, each traced at the
    default limit (rendezvous) and replayed with S raised to the message size (mpiadvise whatif --set
    S=...), against REPS real runs with the library's limit raised as far (raised_limit). A row: the
    predicted and the measured change of the run time, and whether they agree in sign (a what-if must
    never predict a gain that the real run reverses)."""
    rows = []
    for doubles in (16384, 65536, 131072, 262144):
        k = doubles * 8
        argv = [os.path.join(BUILD, setup.mpi, "examples", "halo"), str(doubles), "50"]
        dirs = []
        for _ in range(REPS):
            d = os.path.join(OUT, "runs", "sweep-%s-%s-%d-%d" % (setup.mpi, setup.name, k, time.monotonic_ns()))
            r = run([MPIADVISE, "run", "--dir", d, "--", *setup.launcher(), *argv], cwd=OUT, env=setup.environ())
            if r.returncode != 0:
                rows.append((k, "failed: " + r.stderr.strip()[-200:]))
                break
            rep = json.loads(run([MPIADVISE, "report", "--format", "json", "--params", params, d]).stdout)
            dirs.append((rep["model"]["measured_ns"], d))
        if len(dirs) < REPS:
            continue
        dirs.sort()
        base_ns, base_dir = dirs[len(dirs) // 2]
        w = run([MPIADVISE, "whatif", "--json", "--params", params, "--set", "S=%d" % k, base_dir])
        b = run([MPIADVISE, "whatif", "--json", "--params", params, base_dir])
        if w.returncode != 0 or b.returncode != 0:
            rows.append((k, "whatif failed: " + (w.stderr or b.stderr).strip()[-200:]))
            continue
        predicted = json.loads(w.stdout)["predicted_ns"] / json.loads(b.stdout)["predicted_ns"] - 1
        raised = raised_limit(setup, k)
        try:
            after = [traced("sweep", argv, raised, params, "after")["model"]["measured_ns"] for _ in range(REPS)]
        except RuntimeError as e:
            rows.append((k, "rerun failed: " + str(e)[:200]))
            continue
        measured = statistics.median(after) / statistics.median([m for m, _ in dirs]) - 1
        rows.append((k, predicted, measured))
        if os.environ.get("BENCH_KEEP") != "1":
            for _, d in dirs:
                shutil.rmtree(d, ignore_errors=True)
    print("  eager-limit sweep, halo over %s %s (50 iterations; S raised to the message size; the change of"
          " the median measured run time over %d traced runs each):" % (MPI_NAME[setup.mpi], setup.name, REPS))
    print("    %10s  %10s  %10s  %s" % ("bytes", "what-if", "measured", "agree"))
    for r in rows:
        if len(r) == 2:
            print("    %10d  %s" % r)
        else:
            k, p, m = r
            print("    %10d  %10s  %10s  %s" % (k, pct(p), pct(m), sweep_agreement(p, m)))
    return rows


def median_params(files, out):
    """A parameter file whose every number is the median of that key in that table over the calibrations
    (files), written to out. The first file gives the layout and what is not a number; a key some of them
    lack takes the median of those that have it. But L, o_r and D: the samples measure L, o_r + L and o_r + D
    (each alone is uncertain, the sums are not: mpiadvise-calibrate(1)), so L is the median of L, o_r the
    median o_r + L less it, D the median o_r + D less o_r (a file without o_r_ns has o_r = o'). Returns
    {key: (min, max)} of o_ns and the per-byte costs."""
    def tables(path):
        section, values = "", {}
        for line in open(path):
            s = line.strip()
            if s.startswith("["):
                section = s
            elif "=" in s and not s.startswith("#"):
                key, value = (x.strip() for x in s.split("#", 1)[0].split("=", 1))
                try:
                    values[(section, key)] = float(value)
                except ValueError:
                    pass
        return values
    all_values = [tables(f) for f in files]
    derived = {}
    sec = "[loggps]"
    if all(v.get((sec, k)) is not None for v in all_values for k in ("L_ns", "o_ns")):
        o_r = [v.get((sec, "o_r_ns"), v[(sec, "o_ns")]) for v in all_values]
        L = statistics.median(v[(sec, "L_ns")] for v in all_values)
        derived["o_r_ns"] = max(0.0, statistics.median(r + v[(sec, "L_ns")] for r, v in zip(o_r, all_values)) - L)
        derived["D_ns"] = max(0.0, statistics.median(r + v.get((sec, "D_ns"), 0.0) for r, v in zip(o_r, all_values)) -
                              derived["o_r_ns"])
        derived["L_ns"] = L
        if not any((sec, "o_r_ns") in v for v in all_values):
            del derived["o_r_ns"], derived["D_ns"]  # o_r = o' in every one: D alone, its plain median
    spread = {}
    lines, section = [], ""
    for line in open(files[0]):
        s = line.strip()
        if s.startswith("["):
            section = s
        if section == "[loggps]" and "o_r_ns" in derived and s.startswith("# o_r_ns"):
            line = "o_r_ns = 0  # (o_r = o' in this file)\n"  # replaced below: another file has o_r apart
            s = line.strip()
        if "=" in s and not s.startswith("#"):
            key = s.split("=", 1)[0].strip()
            got = [v[(section, key)] for v in all_values if (section, key) in v]
            if section == "[loggps]" and key in derived:
                line = "%s = %.6f  # from the medians of L, o_r + L and o_r + D over %d calibrations\n" % (
                    key, derived[key], len(files))
            elif got and (section, key) in all_values[0]:
                m = statistics.median_low(got) if key.endswith("_bytes") or key.endswith("_messages") else statistics.median(got)
                number = "%d" % m if key.endswith("_bytes") or key.endswith("_messages") else "%.6f" % m
                line = "%s = %s  # median of %d calibrations (%g..%g)\n" % (key, number, len(got), min(got), max(got))
                if section == "[loggps]" and (key == "o_ns" or key.endswith("_per_byte")):
                    spread[key] = (min(got), max(got))
        lines.append(line)
    with open(out, "w") as f:
        f.write("# %s\n" % ("the median of %d calibrations by mpiadvise calibrate --runs 5: %s" % (len(files), ", ".join(files))))
        f.writelines(lines)
    return spread


def median_run(reports):
    ordered = sorted(reports, key=lambda r: r["model"]["measured_ns"])
    return ordered[len(ordered) // 2]


def ms(ns):
    return "%.1f" % (ns / 1e6)


def spread(values, fmt):
    return "%s (%s..%s)" % (fmt(statistics.median(values)), fmt(min(values)), fmt(max(values)))


def pct(x):
    return "%+.1f%%" % (100 * x)


def advice_rerun(a, argv, setup, changes):
    """The label of a piece of advice, and the setup and program arguments that apply it."""
    if a["kind"] == "raise_eager_limit":
        return "S=%d" % a["value"], setup.with_eager_limit(a), argv
    return a["kind"], setup, argv + changes[a["kind"]](a)


def validate_one(name, argv, setup, np, changes, params):
    """REPS traced runs of one application on one MPI and transport at np ranks, and each piece of advice
    applied to REPS new runs: the table's rows, and the figures for results.json (None when the runs failed)."""
    lead = [name, MPI_NAME[setup.mpi], setup.name, np]
    try:
        reports = [traced(name, argv, setup, params, "base", np, at_set_speed=True, keep=True) for _ in range(REPS)]
    except RuntimeError as e:
        return [tuple(lead + ["-", "-", "-", "-", "-", "failed: %s" % e, "", "", "", "", "", ""])], None
    measured = [r["model"]["measured_ns"] for r in reports]
    predicted = [r["model"]["predicted_ns"] for r in reports]
    errors = [r["model"]["error"] for r in reports]
    at_set = [r["at_set_speed_error"] for r in reports]
    speeds = [r["params"]["run_speed"]["factor"] for r in reports if "run_speed" in r["params"]]
    speed = statistics.median(speeds) if len(speeds) == len(reports) else None
    base = median_run(reports)
    row = lead + ["%.2f" % speed if speed else "-", spread(measured, ms), ms(statistics.median(predicted)),
                  "%s (%s..%s)" % (pct(statistics.median(errors)), pct(min(errors)), pct(max(errors))),
                  pct(statistics.median(at_set))]
    result = {"application": name, "mpi": setup.mpi, "transport": setup.name, "ranks": np, "speed": speed,
              "speeds": speeds, "measured_ns": measured, "predicted_ns": predicted, "errors": errors,
              "errors_at_set_speed": at_set, "advice": []}
    # a row beyond the model's expected error: what the report itself suspects, in the median run
    if abs(statistics.median(errors)) > 0.10:
        result["suspects"] = [{"reason": s["reason"], "detail": s["detail"]} for s in base["model"]["fit"]["suspects"]]
    try:
        return advice_rows(row, result, base, argv, setup, np, changes, params)
    finally:
        drop_logs(reports)


def advice_rows(row, result, base, argv, setup, np, changes, params):
    """The rows of the advice of the run whose measured time is the median (base, its logs still there)."""
    name = result["application"]
    advised = [a for a in base["advice"] if a["kind"] == "raise_eager_limit" or a["kind"] in changes]
    if not advised:
        notes = [n for n in base["notes"] if "no change predicted" in n or "no eager limit" in n or "at most S" in n]
        reason = notes[0] if notes else ""
        row += ["none" + (": " + (reason[:57] + "..." if len(reason) > 60 else reason) if reason else ""), "", "", "", "", "", ""]
        return [tuple(row)], result
    rows = []
    for i, a in enumerate(advised):
        first = row if i == 0 else [""] * len(row)
        label, after_setup, after_argv = advice_rerun(a, argv, setup, changes)
        try:
            after, again = [], []
            for _ in range(REPS):  # in turn: the changed run, then the unchanged one beside it
                after.append(traced(name, after_argv, after_setup, params, "after", np))
                again.append(traced(name, argv, setup, params, "again", np))
        except RuntimeError as e:
            rows.append(tuple(first + [label + " (%s)" % pct(-a["saving"]), "", "", "", "", "", "rerun failed: %s" % str(e)[:200]]))
            continue
        after_ms = [r["model"]["measured_ns"] for r in after]
        again_ms = [r["model"]["measured_ns"] for r in again]
        whatif = a["predicted_ns"]
        rerun_speed, rerun_compute, whatif_there = whatif_at_speed(base, params, a, after)
        again_med, after_med = statistics.median(again_ms), statistics.median(after_ms)
        realised = (1 - after_med / again_med) / a["saving"] if a["saving"] > 0 else float("nan")
        at_rerun = ("%s (at x%.2f, computation x%.2f)" % (pct((whatif_there - after_med) / after_med), rerun_speed,
                                                          rerun_compute)
                    if whatif_there else "-")
        rows.append(tuple(first + [label + " (%s)" % pct(-a["saving"]), ms(whatif), spread(after_ms, ms),
                                   spread(again_ms, ms), pct((whatif - after_med) / after_med), at_rerun,
                                   "%.0f%%" % (100 * realised)]))
        # the rerun's own replay (its logs, its run facts): where it is close and the what-if is not, the
        # what-if's error lies in moving the model to the new setting, not in the model of the run
        result["advice"].append({"kind": a["kind"], "label": label, "saving": a["saving"], "whatif_ns": whatif,
                                 "rerun_ns": after_ms, "rerun_predicted_ns": [r["model"]["predicted_ns"] for r in after],
                                 "unchanged_beside_ns": again_ms, "rerun_speed": rerun_speed,
                                 "rerun_computation_factor": rerun_compute,
                                 "whatif_at_rerun_speed_ns": whatif_there,
                                 "realised": realised})
    return rows, result


def built_mpis():
    wanted = [m for m in os.environ.get("VALIDATE_MPIS", "openmpi,mpich").split(",") if m in MPI_NAME]
    return [m for m in wanted if os.path.exists(os.path.join(BUILD, "lib", "mpiadvise", m, "libmpiadvise.so"))
            and shutil.which(MPIRUN[m])]


def main():
    if not os.access(MPIADVISE, os.X_OK):
        sys.exit("validate: %s is missing; build first (make BUILD=%s)" % (MPIADVISE, os.environ.get("BUILD", "build")))
    os.makedirs(OUT, exist_ok=True)
    only = set(filter(None, os.environ.get("VALIDATE_ONLY", "").split(",")))
    transports = []
    for t in os.environ.get("VALIDATE_TRANSPORTS", "tcp,shm").split(","):
        t = "shm" if t == "vader" else t
        if t in ("tcp", "shm") and t not in transports:
            transports.append(t)
    mpis = built_mpis()
    started = time.time()
    print("mpiadvise validate: %d traced runs per application, MPI, transport and rank count (%s), %s; load average %s"
          % (REPS, ",".join(map(str, NPS)), " and ".join(MPI_NAME[m] for m in mpis), open("/proc/loadavg").read().split()[0]),
          flush=True)

    params = {}
    for m in mpis:
        for t in transports:
            setup = Setup(m, t)
            f = os.path.join(OUT, "params-%s-%s.toml" % (m, setup.name))
            each, residuals = [], []
            for i in range(CALIBRATIONS):
                fi = f if CALIBRATIONS == 1 else os.path.join(OUT, "params-%s-%s.%d.toml" % (m, setup.name, i + 1))
                c = run([MPIADVISE, "calibrate", "--runs", "5", "-o", fi, "--", *setup.launcher()], env=setup.environ())
                if c.returncode != 0:
                    sys.exit("validate: mpiadvise calibrate over %s %s failed: %s" % (MPI_NAME[m], setup.name, c.stderr.strip()))
                each.append(fi)
                residuals.append("; ".join(l.strip() for l in c.stdout.splitlines()
                                           if "residual RMS" in l or l.strip().startswith("above ")))
            params[(m, t)] = f
            if CALIBRATIONS == 1:
                print("  parameters for %s %s: %s (%s)" % (MPI_NAME[m], setup.name, f, residuals[0]), flush=True)
                continue
            spread = median_params(each, f)
            print("  parameters for %s %s: %s, the median of %d calibrations (o' %s ns; Oss, Ors, Osl %s ns/B)"
                  % (MPI_NAME[m], setup.name, f, CALIBRATIONS, "%.0f..%.0f" % spread["o_ns"],
                     ", ".join("%.3f..%.3f" % spread[k] for k in ("Oss_ns_per_byte", "Ors_ns_per_byte", "Osl_ns_per_byte"))),
                  flush=True)
            for r in residuals:
                print("    %s" % r, flush=True)

    rows, results = [], []
    hung = set()  # (MPI, transport, ranks) where an application hung twice: the others are not run there

    def keep(partial_sweep):
        # results.json after every application: a run stopped half-way keeps what it measured
        with open(os.path.join(OUT, "results.json"), "w") as f:
            json.dump({"rows": results, "eager_sweep": partial_sweep}, f, indent=1)

    header = ("application", "MPI", "transport", "ranks", "speed", "measured ms", "predicted ms", "error", "at set speed",
              "advice", "what-if ms", "rerun ms", "unchanged ms", "what-if error", "at rerun speed", "realised")
    for m in mpis:
        for np in NPS:
            for name, argv, why, setup_of, changes in applications(m):
                if only and name not in only:
                    continue
                for t in transports:
                    extra = setup_of(t)
                    if extra is None:
                        continue
                    setup = Setup(m, t, *extra)
                    if why or argv is None:
                        rows.append((name, MPI_NAME[m], setup.name, np, "-", "-", "-", "-", "-",
                                     "not run: " + (why or "?"), "", "", "", "", "", ""))
                        continue
                    if (m, t, np) in hung:
                        rows.append((name, MPI_NAME[m], setup.name, np, "-", "-", "-", "-", "-",
                                     "not run: an application hung twice before it here", "", "", "", "", "", ""))
                        continue
                    row_list, result = validate_one(name, argv, setup, np, changes, params[(m, t)])
                    rows += row_list
                    if result:
                        results.append(result)
                        keep({})
                    elif "hung twice" in str(row_list[0][9]):
                        hung.add((m, t, np))
                    # each row as it is measured; the table follows at the end
                    for r in row_list:
                        print("  measured: " + ", ".join(str(c) for c in r if str(c) != ""), flush=True)

    sweep = {}  # by MPI and transport: (bytes, predicted, measured) rows
    for m, t in SWEPT:
        if (m, t) in params and (not only or "sweep" in only):
            setup = Setup(m, t)
            sweep["%s %s" % (MPI_NAME[m], setup.name)] = [list(r) for r in eager_sweep(setup, params[(m, t)])]
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    widths[9] = min(widths[9], 60)
    for r in ([header] + rows) if rows else []:
        cells = [str(c) for c in r]
        print("  " + "  ".join(c.ljust(w) if i in (0, 1, 2, 9) else c.rjust(w)
                               for i, (c, w) in enumerate(zip(cells, widths))).rstrip())
    missed = [r for r in results if "suspects" in r]
    if missed:
        print("  rows beyond 10%%, with what the report of the median run suspects (%s):" % "model.fit.suspects")
    for r in missed:
        s = r["suspects"][0] if r["suspects"] else {"reason": "none", "detail": "the report names no cause"}
        detail = s["detail"] if len(s["detail"]) <= 150 else s["detail"][:147] + "..."
        machine = " (messages at %.2fx the set's times)" % r["speed"] if r.get("speed") else ""
        print("    %s, %s %s, %d ranks, %s%s: %s: %s" % (r["application"], MPI_NAME[r["mpi"]], r["transport"], r["ranks"],
              pct(statistics.median(r["errors"])), machine, s["reason"], detail))
    keep(sweep)
    print("(%d s; load average %s at the end; figures in %s)" % (time.time() - started,
          open("/proc/loadavg").read().split()[0], os.path.join(OUT, "results.json")))


if __name__ == "__main__":
    main()
