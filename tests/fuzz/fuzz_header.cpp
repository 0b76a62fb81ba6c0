// libFuzzer target: the JSON of a log's header, trailer or META chunk (tests/fuzz/targets.hpp). Seeds:
// tests/fuzz/corpus/header.
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mpa_fuzz::header_json(data, size);
  return 0;
}
