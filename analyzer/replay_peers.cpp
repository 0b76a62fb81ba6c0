#include "replay_peers.hpp"

namespace mpiadvise {
namespace {
ReplayPeers* g_peers = nullptr;
}

void set_replay_peers(ReplayPeers* peers) { g_peers = peers; }
ReplayPeers* replay_peers() { return g_peers; }

}  // namespace mpiadvise
