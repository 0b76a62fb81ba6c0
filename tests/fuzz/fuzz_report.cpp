// libFuzzer target: a report file as `mpiadvise gate --baseline|--candidate FILE` reads one
// (tests/fuzz/targets.hpp: report_file), its figures then gated. Seeds: tests/fuzz/corpus/report, the JSON
// reports of the log fixtures (tests/fuzz/make-corpus.sh), mutated by libFuzzer's own mutations.
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)mpa_fuzz::report_file(data, size);
  return 0;
}
