// The lists the reading of a rank's log appends to (analyzer/mapped_list.hpp): what they hold survives
// their growth, and their address space is the system's again once they are cut to size and freed, which
// is what bounds the reading's peak under ulimit -v.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "mapped_list.hpp"
#include "trace.hpp"

using namespace mpiadvise;

namespace {

// this process's address space (VmSize), bytes
int64_t address_space() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmSize:", 0) == 0) return std::atoll(line.c_str() + 7) * 1024;
  return -1;
}

struct Entry {  // as large as a message
  uint64_t a, b, c;
  uint32_t d, e;
};

}  // namespace

TEST_CASE("a list keeps what it holds as it grows past the size it is mapped from", "[mapped_list]") {
  MappedList<Entry> list;
  const size_t n = 3 * MappedList<Entry>::kMapBytes / sizeof(Entry) + 17;  // grown in the heap, then mapped
  for (size_t i = 0; i < n; i++) list.push_back(Entry{i, 2 * i, ~i, static_cast<uint32_t>(i), 7});
  REQUIRE(list.size() == n);
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++) wrong += list[i].a != i || list[i].b != 2 * i || list[i].c != ~i || list[i].e != 7;
  CHECK(wrong == 0);
  CHECK(list.capacity_bytes() >= n * sizeof(Entry));
  // moved, the same values; the list moved from is empty
  MappedList<Entry> moved(std::move(list));
  CHECK(list.size() == 0);
  CHECK(moved.size() == n);
  CHECK(moved[n - 1].a == n - 1);
  moved.fit();
  CHECK(moved[n - 1].b == 2 * (n - 1));
  CHECK(moved.size() == n);
}

TEST_CASE("a list cut to its size and freed gives its address space back", "[mapped_list]") {
  const int64_t page = sysconf(_SC_PAGESIZE), MiB = 1 << 20;
  const int64_t before = address_space();
  REQUIRE(before > 0);
  MappedList<uint64_t> list;
  const size_t n = 3'000'001;  // 24 MB: its capacity, doubled, 32 MiB
  for (size_t i = 0; i < n; i++) list.push_back(i);
  const int64_t grown = address_space() - before;
  CHECK(grown >= static_cast<int64_t>(n * sizeof(uint64_t)));
  list.fit();
  const int64_t held = static_cast<int64_t>((n * sizeof(uint64_t) + page - 1) / page * page);
  CHECK(static_cast<int64_t>(list.capacity_bytes()) == held);
  CHECK(address_space() - before <= held + MiB);  // the capacity beyond its size given back
  CHECK(list[n - 1] == n - 1);
  list.release();
  CHECK(list.size() == 0);
  CHECK(address_space() - before <= MiB);  // all of it, where a heap keeps what it frees
  // used again after release
  list.push_back(5);
  CHECK(list[0] == 5);
}

TEST_CASE("a small list stays a heap array, and cutting it to size leaves it as it is", "[mapped_list]") {
  MappedList<uint8_t> list;
  for (int i = 0; i < 1000; i++) list.push_back(static_cast<uint8_t>(i));
  CHECK(list.capacity_bytes() < MappedList<uint8_t>::kMapBytes);
  const size_t cap = list.capacity_bytes();
  list.fit();
  CHECK(list.capacity_bytes() == cap);
  CHECK(list[999] == static_cast<uint8_t>(999));
  MappedList<uint8_t> other;
  other = std::move(list);
  CHECK(other.size() == 1000);
  CHECK(other[1] == 1);
}

TEST_CASE("a list drained gives each value in order and its address space back as it goes", "[mapped_list]") {
  const int64_t MiB = 1 << 20;
  const int64_t before = address_space();
  REQUIRE(before > 0);
  MappedList<Entry> list;
  const size_t n = 1'000'003;  // 32 MB of 32-byte entries, which straddle no page but end one mid-way
  for (size_t i = 0; i < n; i++) list.push_back(Entry{i, 3 * i, ~i, static_cast<uint32_t>(i), 9});
  list.fit();
  const int64_t held = address_space() - before;
  REQUIRE(held >= static_cast<int64_t>(n * sizeof(Entry)));
  size_t seen = 0, wrong = 0;
  int64_t most_beyond = 0;  // the most of the list's address space held beyond what was left to read
  list.drain([&](const Entry& e) {
    wrong += e.a != seen || e.b != 3 * seen || e.c != ~seen || e.e != 9;
    seen++;
    if (seen % 4096 == 0)
      most_beyond = std::max(most_beyond, address_space() - before - static_cast<int64_t>((n - seen) * sizeof(Entry)));
  });
  CHECK(seen == n);
  CHECK(wrong == 0);
  CHECK(most_beyond <= 2 * MiB);  // a read value's page is given back within kDrainBytes (and a page)
  CHECK(list.size() == 0);
  CHECK(address_space() - before <= MiB);
  // a small list, in the heap, drains the same
  MappedList<uint8_t> small;
  for (int i = 0; i < 100; i++) small.push_back(static_cast<uint8_t>(i));
  int sum = 0;
  small.drain([&](uint8_t v) { sum += v; });
  CHECK(sum == 4950);
  CHECK(small.empty());
}

namespace {

// A trace of two ranks whose ops' links are given as lists, laid out in the table rank after rank
// (in_order) or the second rank's first. Every list is in the table, those of one link too (the reading
// holds those in their ops), so that compact_links has each kind of op to make.
Trace trace_of(const std::vector<std::vector<std::vector<Link>>>& lists, bool in_order) {
  Trace t;
  t.world_size = static_cast<int>(lists.size());
  t.ranks.resize(lists.size());
  for (size_t r = 0; r < lists.size(); r++) {
    t.ranks[r].rank = static_cast<int>(r);
    t.ranks[r].ops.resize(lists[r].size());
  }
  std::vector<size_t> order(lists.size());
  for (size_t r = 0; r < order.size(); r++) order[r] = in_order ? r : order.size() - 1 - r;
  for (size_t r : order)
    for (size_t k = 0; k < lists[r].size(); k++) {
      Op& op = t.ranks[r].ops[k];
      op.kind = OpKind::Completion;
      t.set_links(op, static_cast<uint32_t>(t.links.size()), static_cast<uint32_t>(lists[r][k].size()));
      for (const Link& l : lists[r][k]) t.links.push_back(l);
    }
  return t;
}

std::vector<Link> links_of(const Trace& t, const Op& op) {
  std::vector<Link> v;
  const OpLinks links = t.links_of(op);
  for (uint32_t k = 0; k < links.size(); k++) v.push_back(links[k]);
  return v;
}

}  // namespace

TEST_CASE("the trace's links compacted keep each op's links to something, in place where the table lies in the "
          "ranks' order and into a new table where not", "[mapped_list][trace]") {
  // rank 0: many ops of three links, one to nothing, then one of
  // a link only, one whose only link is to nothing, one of 300 links (counted apart: spilled) every third
  // to nothing; rank 1: two links, then one
  std::vector<std::vector<std::vector<Link>>> lists(2);
  for (uint32_t i = 0; i < 9000; i++)  // both arrays past the size they are mapped from
    lists[0].push_back({Link{Link::PostSend, i}, Link{Link::DoneSend, kNone}, Link{Link::PostRecv, 100000 + i}});
  lists[0].push_back({Link{Link::PostColl, 7}});
  lists[0].push_back({Link{Link::DoneRecv, kNone}});
  std::vector<Link> many;
  for (uint32_t i = 0; i < 300; i++) many.push_back(Link{Link::DoneRecv, i % 3 == 2 ? kNone : 20000 + i});
  lists[0].push_back(many);
  lists[1].push_back({Link{Link::DoneSend, 9}, Link{Link::DoneRecv, 10}});
  lists[1].push_back({Link{Link::DoneSend, 11}});
  for (const bool in_order : {true, false}) {
    INFO((in_order ? "in the ranks' order" : "the second rank's first"));
    Trace t = trace_of(lists, in_order);
    compact_links(t);
    size_t table = 0, wrong = 0;
    for (size_t r = 0; r < lists.size(); r++)
      for (size_t k = 0; k < lists[r].size(); k++) {
        std::vector<Link> want;
        for (const Link& l : lists[r][k])
          if (l.id != kNone) want.push_back(l);
        const Op& op = t.ranks[r].ops[k];
        wrong += links_of(t, op) != want;
        wrong += (want.size() == 1) != (op.inline_link != 0);  // one link: the op's own
        wrong += want.empty() != (op.kind == OpKind::Other);   // none: no completion
        if (want.size() > 1) table += want.size();
      }
    CHECK(wrong == 0);
    CHECK(t.links.size() == table);  // only the lists of two links or more, nothing to nothing
    // what the table no longer holds is given back: at most a page beyond each array's size
    CHECK(t.links.capacity_bytes() <= table * 5 + 2 * static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  }
}
