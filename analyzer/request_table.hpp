// Live requests of one rank by handle, for the reader to turn the handles a log records into request
// identities. Entries are held by value and named by id: nothing outside holds a pointer into the table.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace mpiadvise {

struct Request {
  uint64_t id = 0;  // 1, 2, ... per rank
  uint32_t comm = 0;
  bool persistent = false;
  bool p2p = true;  // a collective's or Comm_idup's request has a status with no source
};

// A handle names one request at a time, except that MPI libraries may give one handle to several live
// requests: Open MPI returns the same object (ompi_request_empty) for every send and receive to
// MPI_PROC_NULL. Each live request of a handle is kept; a call naming the handle k times names its k
// newest. A handle is reused once its request is gone, and with several threads the reuse can be seen
// (by enter time) before the completion that freed it; requests are almost always completed by the
// thread that made them, so that thread's entries are preferred.
class RequestTable {
 public:
  // At most this many live requests per handle: beyond it the oldest, whose completion the log cannot
  // have shown (tracing paused, a rank cut off), is dropped.
  static constexpr size_t kMaxPerHandle = 4096;

  void add(uint64_t handle, uint16_t thread, const Request& r);
  // The newest live request of the handle, the thread's own first.
  std::optional<Request> find(uint64_t handle, uint16_t thread) const;
  // The requests a call naming `handles` refers to, one per position: each occurrence of a handle its
  // own live request, the newest ones, in the order they were made.
  std::vector<std::optional<Request>> resolve(const std::vector<uint64_t>& handles, uint16_t thread) const {
    std::vector<std::optional<Request>> out;
    resolve(handles, thread, out);
    return out;
  }
  // The same into out (its room reused: the reader resolves a completion's handles at every one)
  void resolve(const std::vector<uint64_t>& handles, uint16_t thread, std::vector<std::optional<Request>>& out) const;
  void erase(uint64_t handle, uint64_t id);
  size_t size() const { return size_; }

 private:
  struct Entry {
    uint16_t thread = 0;
    Request request;
  };
  // positions in entries (oldest first), the thread's own newest first, then the others' newest first
  static std::vector<size_t> preference(const std::vector<Entry>& entries, uint16_t thread);
  // At most this many handles with no live request keep their entry (and its vector's room): MPI libraries
  // hand out the same few request objects again and again, and a handle reused finds its room made.
  static constexpr size_t kKeptEmpty = 4096;
  std::unordered_map<uint64_t, std::vector<Entry>> live_;  // per handle, oldest first
  size_t size_ = 0, empty_ = 0;  // live requests; handles kept with none
};

}  // namespace mpiadvise
