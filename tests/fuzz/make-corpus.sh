#!/usr/bin/env bash
# Writes the committed seed corpus again from the log fixtures (tests/fixtures): whole logs for
# fuzz_log_reader, the JSON of headers, trailers and META chunks for fuzz_header, the fixtures' jobs for
# fuzz_analysis and their reports for fuzz_report, and a 2-rank job traced afresh. The files it writes are
# replaced; the others (inputs a fuzzer found and merged, the format-5 log) are kept.
set -eu
cd "$(dirname "$0")"
fixtures=../fixtures
mpiadvise=../../build/bin/mpiadvise
halo=../../build/examples/halo
if [ ! -x "$mpiadvise" ] || [ ! -e "$halo" ]; then
  echo "make-corpus.sh: $mpiadvise or $halo is missing: build first (make)" >&2
  exit 1
fi
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
# (not threads: its 120 KB took the fuzzer from about 20 runs a second to 3)
for d in halo-procnull p2p-all job-strings halo-damaged; do
  job "corpus/analysis/$d.job" "$fixtures/$d"/rank-*.mpa
done
# fuzz_report: the JSON reports of the same fixtures, compact (halo-damaged's exits 1, its damage reported;
# an empty or cut report fails json.load, and the script with it)
for d in halo-procnull p2p-all job-strings halo-damaged; do
  "$mpiadvise" report --format json "$fixtures/$d" |
    python3 -c "import json, sys; print(json.dumps(json.load(sys.stdin), separators=(',', ':')), end='')" \
      >"corpus/report/$d.json"
done
# a log of the tracer's format (6: repeats, and each chunk's times after its events; the fixtures above are
# of format 4, and the committed corpus keeps a log of format 5 beside), traced afresh
tmp=$(mktemp -d)
"$mpiadvise" run --dir "$tmp/logs" -- mpirun -np 2 "$halo" 512 20 >/dev/null
cp "$tmp/logs/rank-00000.mpa" corpus/log_reader/format6-halo-rank-00000.mpa
job corpus/analysis/format6-halo.job "$tmp/logs"/rank-*.mpa
rm -rf "$tmp"
ls corpus/* | head -40
