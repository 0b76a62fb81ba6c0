// libFuzzer target: a whole log file (tests/fuzz/targets.hpp). Seeds: tests/fuzz/corpus/log_reader.
//
// Its mutator (log_mutator.hpp) mutates a chunk's decompressed payload or the header most of the time, so
// that the decoder behind the chunks' checksums is fuzzed too, and the log's bytes as they are otherwise.
#include "log_mutator.hpp"
#include "targets.hpp"

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::minstd_rand rng(seed);
  if (size >= 16 && rng() % 4 != 0)
    if (size_t n = mpa_fuzz::structured_mutation(data, size, max_size, rng)) return n;
  return LLVMFuzzerMutate(data, size, max_size);  // bytes as they are: headers, lengths, frames
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mpa_fuzz::log_file(data, size);
  return 0;
}
