// RankLog::for_each_event: the events of one rank's log, decoded by the codec (libtrace/codec.h),
// merged across threads by enter time, with peers as world ranks and handles as request identities.
#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include <fmt/format.h>

#include "log_reader.hpp"
#include "request_table.hpp"

extern "C" {
#include "codec.h"
}

namespace mpiadvise {

namespace {

enum class ReqRole { None, Create, CreatePersistent, CreateMessage, Consume, Start, Complete, Free };

ReqRole role_of(int call) {
  switch (call) {
    case MPA_CALL_Isend: case MPA_CALL_Issend: case MPA_CALL_Ibsend: case MPA_CALL_Irsend: case MPA_CALL_Irecv:
    case MPA_CALL_Ibarrier: case MPA_CALL_Ibcast: case MPA_CALL_Ireduce: case MPA_CALL_Iallreduce:
    case MPA_CALL_Igather: case MPA_CALL_Igatherv: case MPA_CALL_Iscatter: case MPA_CALL_Iscatterv:
    case MPA_CALL_Iallgather: case MPA_CALL_Iallgatherv: case MPA_CALL_Ialltoall: case MPA_CALL_Ialltoallv:
    case MPA_CALL_Ialltoallw: case MPA_CALL_Ireduce_scatter: case MPA_CALL_Ireduce_scatter_block:
    case MPA_CALL_Iscan: case MPA_CALL_Iexscan: case MPA_CALL_Comm_idup:
    case MPA_CALL_Imrecv:  // consumes a message (first handle), creates a request (second)
      return ReqRole::Create;
    case MPA_CALL_Send_init: case MPA_CALL_Ssend_init: case MPA_CALL_Bsend_init: case MPA_CALL_Rsend_init:
    case MPA_CALL_Recv_init:
      return ReqRole::CreatePersistent;
    case MPA_CALL_Mprobe: case MPA_CALL_Improbe:
      return ReqRole::CreateMessage;
    case MPA_CALL_Mrecv:
      return ReqRole::Consume;
    case MPA_CALL_Start: case MPA_CALL_Startall: case MPA_CALL_Cancel:
      return ReqRole::Start;  // names requests without ending them
    case MPA_CALL_Wait: case MPA_CALL_Waitall: case MPA_CALL_Waitany: case MPA_CALL_Waitsome:
    case MPA_CALL_Test: case MPA_CALL_Testall: case MPA_CALL_Testany: case MPA_CALL_Testsome:
      return ReqRole::Complete;
    case MPA_CALL_Request_free:
      return ReqRole::Free;
    default:
      return ReqRole::None;
  }
}

bool is_p2p_request(int call, ReqRole role) {
  return call == MPA_CALL_Isend || call == MPA_CALL_Issend || call == MPA_CALL_Ibsend || call == MPA_CALL_Irsend ||
         call == MPA_CALL_Irecv || call == MPA_CALL_Imrecv || role == ReqRole::CreatePersistent;
}

// A rank as recorded: a rank of the communicator, or one of the special ranks; anything else negative
// is no rank at all.
int32_t special_or_undefined(int32_t r) { return r >= kUndefinedRank ? r : kUndefinedRank; }

// One thread's events, decoded chunk by chunk.
struct ThreadStream {
  std::vector<size_t> chunks;  // indices into the chunk list
  size_t next_chunk = 0;
  std::vector<uint8_t> data;
  const uint8_t* p = nullptr;
  const uint8_t* end = nullptr;
  mpa_codec_state state{};
  uint64_t next_enter_tick = 0;  // of the event under the cursor
  bool has_event = false;
};

// The arrays a decoded event points into, grown as events need.
struct DecodeBuffers {
  std::vector<uint64_t> reqs, papi, vcounts;
  std::vector<mpa_status> stats;
  std::vector<uint32_t> cancelled;
  void attach(mpa_decoded& d) {
    d.reqs = reqs.data(), d.reqs_cap = static_cast<uint32_t>(reqs.size());
    d.stats = stats.data(), d.stats_cap = static_cast<uint32_t>(stats.size());
    d.papi = papi.data(), d.papi_cap = static_cast<uint32_t>(papi.size());
    d.cancelled = cancelled.data(), d.cancelled_cap = static_cast<uint32_t>(cancelled.size());
    d.vcounts = vcounts.data(), d.vcounts_cap = static_cast<uint32_t>(vcounts.size());
  }
  void grow(const mpa_decoded& d) {
    if (d.nreq > reqs.size()) reqs.resize(d.nreq);
    if (d.nstat > stats.size()) stats.resize(d.nstat);
    if (d.npapi > papi.size()) papi.resize(d.npapi);
    if (d.ncancelled > cancelled.size()) cancelled.resize(d.ncancelled);
    if (d.nvcounts > vcounts.size()) vcounts.resize(d.nvcounts);
  }
};

}  // namespace

void RankLog::for_each_event(const std::function<void(const Event&)>& fn) const {
  for_each_event_until(UINT64_MAX, [&](const Event& ev) {
    fn(ev);
    return true;
  });
}

bool RankLog::for_each_event_until(uint64_t until_ns, const std::function<bool(const Event&)>& fn) const {
  // the threads' streams in thread order, and each one's thread
  std::vector<ThreadStream> streams;
  std::vector<uint16_t> threads;
  {
    std::map<uint16_t, std::vector<size_t>> by_thread;
    for (size_t i = 0; i < chunks_.size(); i++)
      if (chunks_[i].type == MPA_CHUNK_EVENTS) by_thread[chunks_[i].thread].push_back(i);
    streams.resize(by_thread.size());
    for (auto& [thread, chunks] : by_thread) {
      streams[threads.size()].chunks = std::move(chunks);
      threads.push_back(thread);
    }
  }

  const std::string name = path_.string();
  std::set<uint64_t> reported_chunks;
  const auto corrupt_event = [&](const ThreadStream& s, const uint8_t* at, const std::string& what) {
    const ChunkRef& ch = chunks_[s.chunks[s.next_chunk - 1]];
    if (reported_chunks.insert(ch.offset).second)
      add_problem({name, ch.offset, fmt::format("corrupt: event at byte {} of the chunk: {}", at - s.data.data(), what), true});
  };

  // Positions the stream on its next event (loading chunks as needed); peeks its enter tick.
  auto advance = [&](ThreadStream& s) {
    for (;;) {
      if (s.p && s.p < s.end) {
        int rc = mpa_decode_peek_enter(&s.state, s.p, s.end, &s.next_enter_tick);
        if (rc == MPA_DECODE_OK) {
          s.has_event = true;
          return;
        }
        corrupt_event(s, s.p, mpa_decode_message(rc));
        s.p = s.end;
      }
      if (s.next_chunk >= s.chunks.size()) {
        s.has_event = false;
        return;
      }
      const ChunkRef& c = chunks_[s.chunks[s.next_chunk++]];
      s.p = s.end = nullptr;
      try {
        s.data = payload(c);
      } catch (const LogError& e) {
        if (reported_chunks.insert(c.offset).second) add_problem({name, c.offset, e.detail, true});
        continue;
      }
      const uint8_t* p = s.data.data();
      const uint8_t* end = p + s.data.size();
      s.state.version = format_version_;
      int rc = mpa_decode_chunk_start(&s.state, &p, &end, c.codec);
      if (rc != MPA_DECODE_OK) {
        if (reported_chunks.insert(c.offset).second)
          add_problem({name, c.offset,
                       std::string(rc == MPA_DECODE_TIMES ? "corrupt: events chunk whose times' length does not fit it: "
                                                          : "corrupt: events chunk without its base tick: ") +
                           mpa_decode_message(rc),
                       true});
        continue;
      }
      s.p = p;
      s.end = end;
    }
  };

  RequestTable requests, messages;
  uint64_t next_request = 1;
  Event ev;
  ev.rank = rank_;
  DecodeBuffers buffers;
  mpa_decoded d{};

  // the communicator last asked for is asked for again, as a rule
  uint32_t last_comm = 0;
  const Communicator* last = nullptr;
  auto comm_of = [&](uint32_t id) -> const Communicator* {
    if (last && id == last_comm) return last;
    auto it = comms_.find(id);
    if (it == comms_.end()) return nullptr;
    last_comm = id;
    return last = &it->second;
  };
  auto world = [&](uint32_t comm, int32_t local) {
    if (local < 0) return special_or_undefined(local);
    const Communicator* c = comm_of(comm);
    return c ? c->world_rank(local) : kUndefinedRank;
  };

  // decode one event from s (positioned by advance) into ev
  auto decode = [&](ThreadStream& s, uint16_t thread) -> bool {
    const uint8_t* start = s.p;
    int rc;
    for (;;) {
      buffers.attach(d);
      rc = mpa_decode_event(&s.state, &s.p, s.end, &d);
      if (rc != MPA_DECODE_ROOM) break;
      buffers.grow(d);
    }
    if (rc == MPA_DECODE_OK)
      for (uint32_t i = 0; i < d.ncancelled && rc == MPA_DECODE_OK; i++)
        if (d.cancelled[i] >= d.nstat) rc = MPA_DECODE_RANGE;
    if (rc != MPA_DECODE_OK) {
      corrupt_event(s, start, mpa_decode_message(rc));
      s.p = s.end;
      return false;
    }
    // the chunk's last event: its times must have been all of the chunk's (the event is kept)
    if (s.p == s.end && mpa_decode_chunk_done(&s.state) != MPA_DECODE_OK)
      corrupt_event(s, s.p, mpa_decode_message(MPA_DECODE_TIMES));
    ev.thread = thread;
    ev.call = d.call < calls_->ids.size() ? calls_->ids[d.call] : -1;
    ev.call_name = d.call < calls_->names.size() ? std::string_view(calls_->names[d.call]) : std::string_view("unknown");
    ev.mask = d.mask;
    ev.t_enter_ns = to_ns(d.t_enter);
    ev.t_exit_ns = to_ns(d.t_exit);
    ev.callsite = d.callsite;
    ev.peer_local = d.peer;
    ev.tag = d.tag;
    ev.comm = d.comm;
    ev.bytes = d.bytes;
    ev.peer2_local = d.peer2;
    ev.tag2 = d.tag2;
    ev.bytes2 = d.bytes2;
    ev.handles.assign(d.reqs, d.reqs + d.nreq);
    if (d.nvcounts || !ev.vcounts.empty()) ev.vcounts.assign(d.vcounts, d.vcounts + d.nvcounts);
    ev.requests.clear();
    ev.statuses.resize(d.nstat);
    for (uint32_t i = 0; i < d.nstat; i++)
      ev.statuses[i] = Status{d.stats[i].index, d.stats[i].source, d.stats[i].tag, d.stats[i].bytes, false};
    for (uint32_t i = 0; i < d.ncancelled; i++) ev.statuses[d.cancelled[i]].cancelled = true;
    ev.count = (d.mask & MPA_F_COUNT) ? d.count : 1;
    ev.newcomm = d.newcomm;
    if (d.npapi || !ev.papi.empty()) ev.papi.assign(d.papi, d.papi + d.npapi);
    // The tracer keeps the time inside within the run's span in ticks; the span's ends convert to ns on the
    // fitted line and the time inside by the rate alone, so their roundings can differ by a nanosecond.
    ev.incall_ns = (d.mask & MPA_F_INCALL) ? std::min(ticks_to_ns(d.incall), ev.t_exit_ns - ev.t_enter_ns) : 0;
    ev.value = d.value;
    ev.peer = world(ev.comm, ev.peer_local);
    ev.peer2 = world(ev.comm, ev.peer2_local);
    ev.unfinished = (d.mask & MPA_F_UNFINISHED) != 0;
    ev.resent = (d.mask & MPA_F_RESENT) != 0;
    return true;
  };

  // Request identities and status sources (ranks of the request's communicator -> world ranks).
  std::vector<std::optional<Request>> found;  // a completion's requests
  auto resolve = [&]() {
    const ReqRole role = role_of(ev.call);
    ev.requests.assign(ev.handles.size(), 0);
    if (ev.refused()) return;  // made, completed and freed nothing: its handles name no request
    uint32_t status_comm = ev.comm;
    const uint16_t th = ev.thread;
    switch (role) {
      case ReqRole::Create:
      case ReqRole::CreatePersistent:
        if (!ev.handles.empty()) {
          uint64_t id = next_request++;
          uint32_t comm = ev.comm;
          if (ev.call == MPA_CALL_Imrecv && ev.handles.size() == 2) {  // the message's communicator
            if (auto m = messages.find(ev.handles[0], th)) {
              ev.requests[0] = m->id;
              comm = ev.comm = m->comm;
              messages.erase(ev.handles[0], m->id);
            }
          }
          requests.add(ev.handles.back(), th,
                       Request{id, comm, role == ReqRole::CreatePersistent, is_p2p_request(ev.call, role)});
          ev.requests.back() = id;
        }
        break;
      case ReqRole::CreateMessage:
        if (!ev.handles.empty()) {
          uint64_t id = next_request++;
          messages.add(ev.handles.back(), th, Request{id, ev.comm, false, true});
          ev.requests.back() = id;
        }
        break;
      case ReqRole::Consume:
        if (!ev.handles.empty()) {
          if (auto m = messages.find(ev.handles[0], th)) {
            ev.requests[0] = m->id;
            status_comm = ev.comm = m->comm;
            messages.erase(ev.handles[0], m->id);
          }
        }
        break;
      case ReqRole::Start:
      case ReqRole::Free: {
        requests.resolve(ev.handles, th, found);
        for (size_t i = 0; i < found.size(); i++) {
          if (!found[i]) continue;
          ev.requests[i] = found[i]->id;
          if (role == ReqRole::Free) requests.erase(ev.handles[i], found[i]->id);
        }
        break;
      }
      case ReqRole::Complete: {
        requests.resolve(ev.handles, th, found);
        for (size_t i = 0; i < found.size(); i++)
          if (found[i]) ev.requests[i] = found[i]->id;
        for (auto& st : ev.statuses) {
          if (st.index < 0 || static_cast<size_t>(st.index) >= found.size()) {
            st.source = special_or_undefined(st.source < 0 ? st.source : kUndefinedRank);
            continue;
          }
          auto& r = found[st.index];
          if (!r) {
            st.source = st.source < 0 ? special_or_undefined(st.source) : kUndefinedRank;
            continue;
          }
          if (r->p2p) st.source = world(r->comm, st.source);
          else st.source = kUndefinedRank, st.tag = 0, st.bytes = 0;
          if (!r->persistent) {
            requests.erase(ev.handles[st.index], r->id);
            r.reset();  // a second status for the same position finds no request
          }
        }
        return;
      }
      case ReqRole::None:
        break;
    }
    for (auto& st : ev.statuses) st.source = world(status_comm, st.source);
  };

  // Passes the event of stream i under the cursor on, and moves past it: false where fn said stop.
  const auto take = [&](size_t i) {
    ThreadStream& s = streams[i];
    const bool decoded = decode(s, threads[i]);
    const uint64_t enter_tick = d.t_enter;
    advance(s);
    // an unfinished call that returned after the signal (the rank survived it) is written again when
    // it returns, complete (or as the first of a run of unsuccessful tests), with the same enter tick
    const bool superseded = decoded && ev.unfinished && s.has_event && s.next_enter_tick == enter_tick;
    if (decoded && !superseded) {
      resolve();
      return fn(ev);
    }
    return true;
  };

  // One thread (the rule): its events in their order.
  if (streams.size() == 1) {
    ThreadStream& s = streams[0];
    for (advance(s); s.has_event;) {
      if (until_ns != UINT64_MAX && to_ns(s.next_enter_tick) >= until_ns) return true;
      if (!take(0)) return s.has_event;
    }
    return false;
  }

  // Merge the threads by enter time, the lower thread first at the same tick.
  using Item = std::pair<uint64_t, uint32_t>;  // enter tick, stream
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  for (size_t i = 0; i < streams.size(); i++) {
    advance(streams[i]);
    if (streams[i].has_event) heap.emplace(streams[i].next_enter_tick, static_cast<uint32_t>(i));
  }
  while (!heap.empty()) {
    if (until_ns != UINT64_MAX && to_ns(heap.top().first) >= until_ns) return true;
    const uint32_t i = heap.top().second;
    heap.pop();
    if (!take(i)) return streams[i].has_event || heap.size() > 0;
    if (streams[i].has_event) heap.emplace(streams[i].next_enter_tick, i);
  }
  return false;
}

}  // namespace mpiadvise
