// The messages of a run at their posts, from the trace or from the ranks' op streams: what the stages that
// weigh messages by the call that sent or received them read (the report's messages by size and by site,
// the largest message, the advice's blocking sites, repeated calls and eager limit), one code for both.
//
// From the streams, each rank's own stream gives every side its ops posted: a send's fields travel with
// it, and so does a receive's (StreamOp::received, the sender's fields, for a receive some send matched;
// StreamOp::posted for one no send matched). No stream is walked beside another and nothing is held but
// the rank's cursor: a message's two sides are met apart, each where its own rank posted it.
#pragma once

#include <utility>
#include <vector>

#include "op_stream.hpp"
#include "trace.hpp"

namespace mpiadvise {

// A message at one of its posts: its send's, or its receive's.
struct MessageSide {
  int rank = -1;  // the posting op's
  uint32_t callsite = 0;
  uint8_t call = 0;
  OpKind kind = OpKind::Other;
  bool send = false;     // at its send's post (else its receive's)
  bool matched = false;  // the trace has both its send and a receive
  uint32_t id = kNone;
  const Message* fields = nullptr;  // its ranks, communicator, tag, bytes and flags; not its ops
};

class MessageSides {
 public:
  explicit MessageSides(const Trace& t) : trace_(&t) {}
  explicit MessageSides(const Trace&&) = delete;  // a temporary would not outlive it
  explicit MessageSides(const std::vector<OpStream>& streams) : streams_(&streams) {}
  explicit MessageSides(const std::vector<OpStream>&&) = delete;  // a temporary would not outlive it
  // f(const MessageSide&) at every post of every message the trace holds: from the trace message by
  // message, from the streams rank by rank in the order of its ops (the folds that call it rely on no order)
  template <class F>
  void each(F&& f) const {
    MessageSide s;
    if (trace_) {
      for (uint32_t id = 0; id < trace_->messages.size(); id++) {
        const Message& m = trace_->messages[id];
        s.id = id, s.fields = &m, s.matched = m.matched();
        for (const bool send : {true, false}) {
          const uint32_t i = send ? m.send_op : m.recv_op;
          if (i == kNone) continue;
          s.rank = send ? m.src : m.dst, s.send = send;
          at(trace_->op(s.rank, i), s);
          f(std::as_const(s));
        }
      }
      return;
    }
    StreamOp op;
    for (size_t r = 0; r < streams_->size(); r++) {
      OpCursor c((*streams_)[r]);
      s.rank = static_cast<int>(r);
      while (c.next(op)) {
        if (op.posted.empty() && op.received.empty()) continue;
        at(op, s);
        for (const StreamOp::Posted& p : op.posted) {
          s.id = p.id, s.fields = &p.m->fields, s.send = p.m->sent, s.matched = p.m->answered;
          f(std::as_const(s));
        }
        s.send = false, s.matched = true;
        for (const StreamOp::Posted& p : op.received) {
          s.id = p.id, s.fields = &p.m->fields;
          f(std::as_const(s));
        }
      }
    }
  }

 private:
  template <class O>
  static void at(const O& op, MessageSide& s) {
    s.callsite = op.callsite, s.call = op.call, s.kind = op.kind;
  }
  const Trace* trace_ = nullptr;
  const std::vector<OpStream>* streams_ = nullptr;
};

}  // namespace mpiadvise
