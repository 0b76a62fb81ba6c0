#include "message_probe.hpp"

#include <algorithm>

#include "calibration.hpp"
#include "trace.hpp"

namespace mpiadvise {

std::optional<MessageProbe> message_probe(const JobLog& job) {
  for (const auto& r : job.ranks()) {
    if (r->rank() != 0) continue;
    MessageProbe p;
    const auto read = [&](const nlohmann::json& part, std::vector<std::vector<double>>& into) {
      if (!part.is_object()) return;
      auto it = part.find("message_probe");
      if (it == part.end()) return;  // log_header.cpp checked its shape
      std::vector<uint64_t> bytes = (*it)["bytes"].get<std::vector<uint64_t>>();
      if (!p.bytes.empty() && bytes != p.bytes) return;  // not the init's sizes: left out
      p.bytes = bytes;
      into = (*it)["round_trip_ns"].get<std::vector<std::vector<double>>>();
      if (auto copies = it->find("copy_ns"); copies != it->end()) {
        const auto c = copies->get<std::vector<std::vector<double>>>();
        p.copies.resize(bytes.size());
        for (size_t i = 0; i < c.size() && i < bytes.size(); i++) p.copies[i].insert(p.copies[i].end(), c[i].begin(), c[i].end());
      }
      if (auto ranks = it->find("ranks"); ranks != it->end()) p.partner = (*ranks)[1].get<int>();
    };
    read(r->header(), p.init);
    read(r->trailer(), p.finalize);
    if (p.bytes.empty()) return std::nullopt;
    return p;
  }
  return std::nullopt;
}

double rewrite_bytes_per_ns(const std::optional<MessageProbe>& probe) {
  double fastest = 0;
  if (probe)
    for (size_t i = 0; i < probe->copies.size() && i < probe->bytes.size(); i++) {
      if (probe->bytes[i] == 0 || probe->copies[i].empty()) continue;
      const double ns = median(probe->copies[i]);
      if (ns > 0) fastest = std::max(fastest, static_cast<double>(probe->bytes[i]) / ns);
    }
  return fastest > 0 ? 2 * fastest : kRewriteBytesPerNs;
}

}  // namespace mpiadvise
