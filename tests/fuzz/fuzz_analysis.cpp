// libFuzzer target: a job's logs analysed and reported as `mpiadvise report` does them (tests/fuzz/targets.hpp:
// job_analysis): the matching of messages and collectives, the replay, the waits, the advice's what-ifs,
// the gate figures and the charts, on events a damaged or unusual log may hold. Seeds: tests/fuzz/corpus/
// analysis, each a job of the log fixtures (tests/fuzz/make-corpus.sh).
//
// Its mutator mutates one log of the job as fuzz_log_reader does one (log_mutator.hpp: most often a chunk's
// decompressed payload, so that what is mutated is decoded into events), or the input's bytes as they are.
#include "log_mutator.hpp"
#include "targets.hpp"

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::minstd_rand rng(seed);
  if (rng() % 4 != 0) {
    auto logs = mpa_fuzz::split_job(data, size);
    if (!logs.empty()) {
      auto& log = logs[rng() % logs.size()];
      const size_t room = max_size > size ? std::min<size_t>(max_size - size, 256) : 0;
      const size_t was = log.size();
      log.resize(was + room);
      if (was >= 16) {
        if (size_t n = mpa_fuzz::structured_mutation(log.data(), was, log.size(), rng)) {
          log.resize(n);
          const auto out = mpa_fuzz::join_job(logs);
          if (out.size() <= max_size) {
            std::memcpy(data, out.data(), out.size());
            return out.size();
          }
        }
      }
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);  // bytes as they are: the sizes, headers, frames
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)mpa_fuzz::job_analysis(data, size);
  return 0;
}
