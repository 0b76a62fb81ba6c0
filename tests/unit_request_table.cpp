// The reader's table of live requests (analyzer/request_table.hpp): handles to request identities,
// including one handle given to several live requests at once, as Open MPI does for MPI_PROC_NULL.
#include <catch2/catch.hpp>

#include "request_table.hpp"

using namespace mpiadvise;

namespace {

Request req(uint64_t id, bool persistent = false) { return Request{id, 1, persistent, true}; }

std::vector<uint64_t> ids(const std::vector<std::optional<Request>>& found) {
  std::vector<uint64_t> out;
  for (const auto& r : found) out.push_back(r ? r->id : 0);
  return out;
}

}  // namespace

TEST_CASE("one handle given to four live requests: a call naming it four times names each once", "[requests]") {
  const uint64_t empty = 0x7f00aa00, other = 0x7f00bb00;
  RequestTable t;
  t.add(empty, 0, req(1));  // Irecv from MPI_PROC_NULL
  t.add(other, 0, req(2));  // Irecv from a neighbour
  t.add(empty, 0, req(3));  // Isend to MPI_PROC_NULL
  t.add(empty, 0, req(4));  // Isend to MPI_PROC_NULL
  CHECK(t.size() == 4);
  auto found = t.resolve({empty, other, empty, empty}, 0);
  CHECK(ids(found) == std::vector<uint64_t>{1, 2, 3, 4});
  // completing each (as a Waitall's statuses do) leaves the others in place
  t.erase(empty, 3);
  CHECK(ids(t.resolve({empty, empty}, 0)) == std::vector<uint64_t>{1, 4});
  t.erase(empty, 1);
  t.erase(empty, 4);
  t.erase(other, 2);
  CHECK(t.size() == 0);
  CHECK_FALSE(t.find(empty, 0));
}

TEST_CASE("a call naming a handle fewer times than it has live requests names the newest", "[requests]") {
  RequestTable t;
  t.add(7, 0, req(1));  // a request whose completion the log did not show
  t.add(7, 0, req(2));
  t.add(7, 0, req(3));
  CHECK(t.find(7, 0)->id == 3);
  CHECK(ids(t.resolve({7, 7}, 0)) == std::vector<uint64_t>{2, 3});
  CHECK(ids(t.resolve({9, 7}, 0)) == std::vector<uint64_t>{0, 3});
}

TEST_CASE("with several threads, the calling thread's requests come first", "[requests]") {
  RequestTable t;
  t.add(5, 0, req(1));
  t.add(5, 1, req(2));  // thread 1 reuses the handle before thread 0's completion is seen
  CHECK(t.find(5, 0)->id == 1);
  CHECK(t.find(5, 1)->id == 2);
  CHECK(t.find(5, 2)->id == 2);  // a third thread: the newest
  CHECK(ids(t.resolve({5, 5}, 0)) == std::vector<uint64_t>{1, 2});
  t.erase(5, 1);
  CHECK(t.find(5, 0)->id == 2);
}

TEST_CASE("lookups return copies: erasing while holding what was found is safe", "[requests]") {
  // the reader once kept pointers into the table across erases; a duplicate handle then read freed
  // memory. Everything handed out is a value now.
  RequestTable t;
  for (uint64_t id = 1; id <= 100; id++) t.add(42, 0, req(id));
  auto found = t.resolve(std::vector<uint64_t>(100, 42), 0);
  for (size_t i = 0; i < found.size(); i++) {
    REQUIRE(found[i]);
    CHECK(found[i]->id == i + 1);
    t.erase(42, found[i]->id);
  }
  CHECK(t.size() == 0);
}

TEST_CASE("a handle holds at most kMaxPerHandle live requests: the oldest go first", "[requests]") {
  RequestTable t;
  for (uint64_t id = 1; id <= RequestTable::kMaxPerHandle + 10; id++) t.add(1, 0, req(id));
  CHECK(t.size() == RequestTable::kMaxPerHandle);
  auto all = t.resolve(std::vector<uint64_t>(RequestTable::kMaxPerHandle + 1, 1), 0);
  CHECK(all.front()->id == 11);
  CHECK_FALSE(all.back());
}

TEST_CASE("handles completed and handed out again, many at a time, name their newest request", "[requests]") {
  // MPI libraries give a completed request's object to the next request: the table keeps the room of up
  // to kKeptEmpty handles with no live request, and forgets the others
  RequestTable t;
  const uint64_t handles = 3 * 4096;
  uint64_t id = 0;
  for (int round = 0; round < 3; round++) {
    for (uint64_t h = 1; h <= handles; h++) t.add(h * 64, 0, req(++id));
    CHECK(t.size() == handles);
    // a Waitall of 40 different handles (the sorted path) and one of 8 (the pairwise one), as the
    // duplicate-aware path would resolve them
    std::vector<uint64_t> many, few;
    for (uint64_t h = 1; h <= 40; h++) many.push_back((handles + 1 - h) * 64);
    for (uint64_t h = 1; h <= 8; h++) few.push_back(h * 64);
    const uint64_t first = id - handles;  // the round's first request
    auto found = t.resolve(many, 0);
    for (size_t i = 0; i < many.size(); i++) CHECK(found[i]->id == first + many[i] / 64);
    found = t.resolve(few, 0);
    for (size_t i = 0; i < few.size(); i++) CHECK(found[i]->id == first + few[i] / 64);
    for (uint64_t h = 1; h <= handles; h++) t.erase(h * 64, first + h);
    CHECK(t.size() == 0);
    CHECK_FALSE(t.find(64, 0));
    CHECK(ids(t.resolve({64, 128}, 0)) == std::vector<uint64_t>{0, 0});
  }
  // distinct handles with several threads: each the calling thread's own newest first
  t.add(1, 0, req(100));
  t.add(1, 1, req(101));
  t.add(2, 1, req(102));
  CHECK(ids(t.resolve({1, 2}, 0)) == std::vector<uint64_t>{100, 102});
  CHECK(ids(t.resolve({1, 2}, 1)) == std::vector<uint64_t>{101, 102});
  CHECK(ids(t.resolve({2, 1}, 2)) == std::vector<uint64_t>{102, 101});
}
