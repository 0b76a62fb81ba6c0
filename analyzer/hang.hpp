// A run that did not finish: a job killed for running too long (mpirun's timeout, SIGTERM, SIGINT, a
// scheduler's limit) leaves logs that end inside MPI calls (the tracer writes the call each thread was
// in when the signal came: Op::unfinished). Where every rank was at the end, and the wait-for graph
// between them: a cycle is a deadlock, with its call sites; otherwise the chains of waiting ranks end
// at the ranks everyone waits for (computing, outside MPI, or gone).
#pragma once

#include <cstdint>
#include <vector>

#include "op_stream.hpp"
#include "trace.hpp"

namespace mpiadvise {

struct HangState {
  enum class State {
    Finished,   // reached MPI_Finalize, or went on beyond the part analysed (--until: RankTrace::cut)
                // (--from: a rank whose every call is before the part is where its log ended)
    InMpi,      // inside an MPI call when it was stopped (its last op, unfinished)
    Computing,  // outside MPI since its last call returned (or its log was cut there)
    NoLog,      // no log of this rank
  };
  struct Rank {
    int rank = 0;
    State state = State::Finished;
    uint32_t op = kNone;   // its last op
    double since_ns = 0;   // when it entered that call (InMpi), or left it (Computing)
    std::vector<int> waits_for;  // InMpi: the ranks it waits for (empty: not known)
    bool any_source = false;     // it waits for any rank of a communicator (MPI_ANY_SOURCE)
  };
  bool finished = true;       // every rank with a log reached MPI_Finalize
  double end_ns = 0;          // the last time of any log
  std::vector<Rank> ranks;    // every rank, by rank
  std::vector<std::vector<int>> deadlocks;  // cycles of the wait-for graph, each in the order of waiting
  std::vector<int> waited_for;  // not waiting themselves, but waited for: where the run is held up
};

HangState hang_state(const Trace& trace);
// The same from the ranks' op streams (OpStream::encode_all of the trace), the trace asked its
// communicators and its ranks' parts (RankTrace::cut, calls_before, last_before) alone: each rank's last
// op sought in its stream; where it completes nothing, the rank's stream walked once for what it posted
// and did not complete, and its receivers' for the receives of its sends. The same state, field for
// field, where every message's posts and completions are its own sides', as build_trace makes them.
HangState hang_state(const Trace& trace, const std::vector<OpStream>& streams);

const char* hang_state_name(HangState::State s);

}  // namespace mpiadvise
