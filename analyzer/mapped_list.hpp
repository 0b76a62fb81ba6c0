// A list of plain values that is appended to, read, and then given up whole: what the reading of a rank's
// log holds until the rank joins the trace (its sends, receives, links and collective memberships). A
// std::vector grown by doubling holds up to twice its size, and while it grows its old and new arrays at
// once; the heap keeps what it frees in its address space. Past kMapBytes this list lives in a mapping of
// its own instead: grown with mremap, which moves pages rather than copying them (never the old and new
// arrays at once), cut to its size in place (fit), and unmapped when freed, so that its address space is
// the system's again at once.
// The address space is what ulimit -v limits: mpiadvise report --format json --threads 1 of mpiadvise-synth's
// halo of 64 ranks x 10^5 calls needed a limit of 594 MiB while the reading held vectors (its peak where the
// parts, at their capacity, were all held beside the trace's arrays), 407 MiB with these lists, about its
// peak of memory (390 MiB, elsewhere in the report).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace mpiadvise {

template <class T>
class MappedList {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
  // a mapping's length is its capacity's bytes rounded up to pages: exact while a value is at most a page
  static_assert(sizeof(T) <= 4096);

 public:
  // Below this a list is a malloc'd array: a mapping is whole pages, and the kernel allows a process
  // vm.max_map_count of them (65530 by default), which 10^5 ranks' lists of a few calls would pass (a
  // rank's reading holds five: its sends, receives, links' ids and kinds, and collective memberships). A
  // mapping the kernel refuses leaves the list in the heap, as a vector would be. (16 KiB: mpiadvise-synth's
  // halo of 1024 ranks x 5000 calls, whose lists are of 16 to 64 KiB, under ulimit -v 378 MiB, not 417 as
  // at 64 KiB.)
  static constexpr size_t kMapBytes = size_t{16} << 10;

  MappedList() = default;
  MappedList(const MappedList&) = delete;
  MappedList& operator=(const MappedList&) = delete;
  MappedList(MappedList&& o) noexcept { take(o); }
  MappedList& operator=(MappedList&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~MappedList() { release(); }

  void push_back(const T& v) {
    if (size_ == capacity_) grow();
    data_[size_++] = v;
  }
  // Room for n values in one step, where it has less (a list about to take n: no doubling past them).
  void reserve(size_t n) {
    if (n > capacity_) grow(n);
  }
  // Its first n values kept (at most its size), the pages beyond given back where it is mapped (fit).
  void truncate(size_t n) {
    size_ = std::min(size_, n);
    fit();
  }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  // the bytes it holds of memory or address space
  size_t capacity_bytes() const { return mapped_ ? round_to_pages(capacity_ * sizeof(T)) : capacity_ * sizeof(T); }

  // Its capacity cut to its size where it is mapped (in place: the pages beyond are given back).
  void fit() {
    if (!mapped_) return;
    const size_t have = round_to_pages(capacity_ * sizeof(T)), need = round_to_pages(size_ * sizeof(T));
    if (need == 0) {
      release();
      return;
    }
    if (need >= have || mremap(data_, have, need, 0) == MAP_FAILED) return;
    capacity_ = need / sizeof(T);
  }

  // f(value) on each value in order, the pages read given back as it goes (kDrainBytes at a time): emptied,
  // it never holds more than that beyond what is left to read. What is read out into another list so
  // takes no more memory than the one list.
  static constexpr size_t kDrainBytes = size_t{1} << 20;
  template <class F>
  void drain(F&& f) {
    if (!mapped_) {
      for (size_t i = 0; i < size_; i++) f(std::as_const(data_[i]));
      release();
      return;
    }
    char* const base = reinterpret_cast<char*>(data_);
    const size_t page = round_to_pages(1);
    size_t given = 0;  // bytes from base unmapped
    for (size_t i = 0; i < size_; i++) {
      f(std::as_const(data_[i]));
      // the whole pages below the next value's start
      if (const size_t read = (i + 1) * sizeof(T) / page * page; read - given >= kDrainBytes) {
        munmap(base + given, read - given);
        given = read;
      }
    }
    munmap(base + given, round_to_pages(capacity_ * sizeof(T)) - given);
    data_ = nullptr;
    size_ = capacity_ = 0;
    mapped_ = false;
  }

  // Empty, its memory and address space given back.
  void release() {
    if (mapped_) munmap(data_, round_to_pages(capacity_ * sizeof(T)));
    else std::free(data_);
    data_ = nullptr;
    size_ = capacity_ = 0;
    mapped_ = false;
  }

 private:
  T* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
  bool mapped_ = false;

  static size_t round_to_pages(size_t bytes) {
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return (bytes + page - 1) / page * page;
  }
  void take(MappedList& o) {
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    capacity_ = std::exchange(o.capacity_, 0);
    mapped_ = std::exchange(o.mapped_, false);
  }
  // to twice its capacity, or to `exactly` values (reserve)
  void grow(size_t exactly = 0) {
    if (capacity_ > SIZE_MAX / 2 / sizeof(T) || exactly > SIZE_MAX / 2 / sizeof(T)) throw std::bad_alloc();
    const size_t wanted = exactly ? exactly : capacity_ ? capacity_ * 2 : std::max<size_t>(1, 256 / sizeof(T));
    const size_t bytes = wanted * sizeof(T);
    const size_t mapping = round_to_pages(bytes);
    void* p = MAP_FAILED;
    if (mapped_) {
      p = mremap(data_, round_to_pages(capacity_ * sizeof(T)), mapping, MREMAP_MAYMOVE);
      if (p == MAP_FAILED) {  // back to the heap
        void* h = std::malloc(bytes);
        if (!h) throw std::bad_alloc();
        std::memcpy(h, data_, size_ * sizeof(T));
        munmap(data_, round_to_pages(capacity_ * sizeof(T)));
        data_ = static_cast<T*>(h);
        capacity_ = wanted;
        mapped_ = false;
        return;
      }
    } else if (bytes >= kMapBytes) {
      p = mmap(nullptr, mapping, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p != MAP_FAILED) {
        if (size_) std::memcpy(p, data_, size_ * sizeof(T));
        std::free(data_);
      }
    }
    if (p == MAP_FAILED) {
      p = std::realloc(data_, bytes);
      if (!p) throw std::bad_alloc();
      data_ = static_cast<T*>(p);
      capacity_ = wanted;
      return;
    }
    data_ = static_cast<T*>(p);
    capacity_ = mapping / sizeof(T);
    mapped_ = true;
  }
};

}  // namespace mpiadvise
