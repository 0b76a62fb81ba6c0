#!/usr/bin/env bash
# Writes the committed seed corpus again from the log fixtures (tests/fixtures): whole logs for
# fuzz_log_reader, and the JSON of headers, trailers and META chunks for fuzz_header.
set -eu
cd "$(dirname "$0")"
fixtures=../fixtures
rm -rf corpus
mkdir -p corpus/log_reader corpus/header corpus/analysis corpus/report
for f in "$fixtures"/{halo-procnull,p2p-all,job-strings,halo-damaged,header-only}/rank-*.mpa; do
  cp "$f" "corpus/log_reader/$(basename "$(dirname "$f")")-$(basename "$f")"
done
python3 - "$fixtures" <<'PY'
import os, struct, subprocess, sys
fixtures = sys.argv[1]
for name in ("halo-procnull", "p2p-all", "job-strings"):
    data = open(os.path.join(fixtures, name, "rank-00000.mpa"), "rb").read()
    n = struct.unpack_from("<I", data, 12)[0]
    open("corpus/header/%s-header.json" % name, "wb").write(data[16:16 + n])
    off = 16 + n
    while off + 32 <= len(data):
        magic, ctype, codec, thread, raw, stored = struct.unpack_from("<IBBHII", data, off)
        if ctype == 4:  # TRAILER
            frame = data[off + 32:off + 32 + stored]
            out = subprocess.run(["zstd", "-dc"], input=frame, stdout=subprocess.PIPE, check=True).stdout
            open("corpus/header/%s-trailer.json" % name, "wb").write(out)
        off += 32 + stored
open("corpus/header/minimal.json", "w").write('{"rank":0,"size":1,"calls":["MPI_Init"]}')
open("corpus/header/meta-abort.json", "w").write('{"aborted":true,"errorcode":7}')
PY
# fuzz_analysis: each fixture's logs as one job (targets.hpp: split_job), at most 4 ranks
job() {  # job OUTPUT LOG...
  python3 - "$@" <<'PY'
import struct, sys
logs = [open(f, "rb").read() for f in sys.argv[2:][:4]]
out = bytes([len(logs) - 1]) + b"".join(struct.pack("<I", len(l)) for l in logs[:-1]) + b"".join(logs)
open(sys.argv[1], "wb").write(out)
PY
}
# (not threads: its 120 KB would slow every run; fuzz_log_reader has it)
for d in halo-procnull p2p-all job-strings halo-damaged; do
  job "corpus/analysis/$d.job" "$fixtures/$d"/rank-*.mpa
done
# fuzz_report: the JSON reports of the same fixtures, compact (halo-damaged: its damage reported, exit status 1)
if [ -x ../../build/bin/mpiadvise ]; then
  for d in halo-procnull p2p-all job-strings halo-damaged; do
    ../../build/bin/mpiadvise report --format json "$fixtures/$d" 2>/dev/null | python3 -c "import json, sys; print(json.dumps(json.load(sys.stdin), separators=(',', ':')), end='')" >"corpus/report/$d.json"
  done
fi
# a log of the tracer's format (6: repeats, and each chunk's times after its events; the fixtures above are
# of format 4, and the committed corpus keeps a log of format 5 beside), traced afresh when a tracer is built
if [ -x ../../build/bin/mpiadvise ] && [ -e ../../build/examples/halo ]; then
  tmp=$(mktemp -d)
  ../../build/bin/mpiadvise run --dir "$tmp/logs" -- mpirun -np 2 ../../build/examples/halo 512 20 >/dev/null
  cp "$tmp/logs/rank-00000.mpa" corpus/log_reader/format6-halo-rank-00000.mpa
  job corpus/analysis/format6-halo.job "$tmp/logs"/rank-*.mpa
  rm -rf "$tmp"
fi
ls corpus/* | head -40
