#include "run_facts.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace mpiadvise {

namespace {

// Bytes of headers that Open MPI's ob1 counts in a BTL's eager limit: measured on loopback TCP with a
// receiver 20 ms late (btl_tcp_eager_limit 65536: a 65480-byte send returned at once, a 65481-byte one
// waited; with 4096: 4040 and 4041).
constexpr uint64_t kOb1TcpHeaderBytes = 56;

std::optional<uint64_t> cvar(const nlohmann::json& h, const std::string& name) {
  const auto& cv = h.value("cvars", nlohmann::json::object());
  if (!cv.contains(name)) return std::nullopt;
  const auto& v = cv[name];
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

}  // namespace

RunFacts run_facts(const JobLog& job) {
  RunFacts f;
  std::set<std::string> hosts;
  for (const auto& r : job.ranks()) hosts.insert(r->header().value("hostname", ""));
  f.hosts.assign(hosts.begin(), hosts.end());
  if (job.ranks().empty()) return f;
  const auto& h = job.ranks().front()->header();
  std::string lib = h.value("mpi_library", "");
  if (lib.find("Open MPI") != std::string::npos) {
    f.library = "Open MPI";
    auto v = lib.find(" v");
    if (v != std::string::npos) f.library_version = lib.substr(v + 2, lib.find_first_of(", ", v + 2) - v - 2);
  } else if (lib.find("MPICH") != std::string::npos) {
    f.library = "MPICH";
  } else {
    f.library = lib.substr(0, lib.find(','));
  }
  const auto env = h.value("env", nlohmann::json::object());
  std::string pml = env.value("OMPI_MCA_pml", ""), btl = env.value("OMPI_MCA_btl", "");
  if (f.library == "Open MPI") {
    // OMPI_MCA_btl is a list of BTLs to use, or with a leading ^ a list to leave out
    const bool exclude = !btl.empty() && btl[0] == '^';
    std::set<std::string> named;
    for (size_t at = exclude ? 1 : 0; at <= btl.size();) {
      size_t comma = btl.find(',', at);
      if (comma == std::string::npos) comma = btl.size();
      if (comma > at) named.insert(btl.substr(at, comma - at));
      at = comma + 1;
    }
    auto usable = [&](const char* b) { return btl.empty() || (exclude ? !named.count(b) : named.count(b) > 0); };
    const bool shared_memory = usable("vader") || usable("sm");
    if (pml == "ucx") f.transport = "ucx";
    else if (hosts.size() <= 1 && shared_memory) f.transport = "vader";
    else f.transport = "tcp";
    if (f.transport == "tcp") {
      f.eager_setting = "btl_tcp_eager_limit";
      f.configured_S = cvar(h, "btl_tcp_eager_limit");
      if (f.configured_S && *f.configured_S > kOb1TcpHeaderBytes) {
        f.effective_S = *f.configured_S - kOb1TcpHeaderBytes;
        f.effective_S_note = fmt::format("btl_tcp_eager_limit {} less {} bytes of headers", *f.configured_S,
                                         kOb1TcpHeaderBytes);
      }
    } else if (f.transport == "vader") {
      // Shared memory is not textbook (docs: platform notes): a blocking send above
      // btl_vader_max_inline_send that does not fit the per-peer fast box completes only when the
      // receiver enters MPI, whatever btl_vader_eager_limit says; calibrate measured S = 256 here.
      f.eager_setting = "btl_vader_eager_limit";
      f.configured_S = cvar(h, "btl_vader_eager_limit");
      // measured: the pipeline example took 0.122 s at 4096, 131072 and 262144
      f.eager_setting_futile = "over Open MPI's shared memory (vader) a send above btl_vader_max_inline_send can wait "
                               "for its receiver whatever btl_vader_eager_limit says (raising it was measured not to "
                               "help)";
      if (auto inline_send = cvar(h, "btl_vader_max_inline_send")) {
        f.effective_S = f.configured_S ? std::min(*inline_send, *f.configured_S) : *inline_send;
        f.effective_S_note = fmt::format("btl_vader_max_inline_send {}: on shared memory a larger send can wait for its "
                                         "receiver whatever btl_vader_eager_limit says", *inline_send);
      }
    } else if (f.transport == "ucx") {
      f.eager_setting = "UCX_RNDV_THRESH";
    }
  } else if (f.library == "MPICH") {
    // MPICH's eager limit is a control variable of its device: ch3's CH3_EAGER_MAX_MSG_SIZE, ch4 OFI's
    // CH4_OFI_EAGER_MAX_MSG_SIZE; the tracer logged whichever the library has (set as MPIR_CVAR_<name>)
    f.transport = "unknown";
    const nlohmann::json cvars = h.value("cvars", nlohmann::json::object());  // items() of a temporary dangles
    for (const auto& [name, value] : cvars.items()) {
      std::string bare = name.rfind("MPIR_CVAR_", 0) == 0 ? name.substr(10) : name;
      if (bare.find("EAGER_MAX_MSG_SIZE") == std::string::npos) continue;
      f.eager_setting = "MPIR_CVAR_" + bare;
      f.configured_S = cvar(h, name);
      if (f.configured_S) {
        f.effective_S = f.configured_S;
        f.effective_S_note = f.eager_setting + " as configured";
      }
      f.transport = bare.find("OFI") != std::string::npos ? "ofi" : bare.find("CH3") != std::string::npos ? "ch3" : "unknown";
      break;
    }
  } else {
    f.transport = "unknown";
  }
  return f;
}

ChosenParams choose_params(const RunFacts& facts, const std::string& requested, const std::filesystem::path& dir) {
  ChosenParams c;
  if (!requested.empty()) {
    c.params = find_params(requested, dir);
    c.why = fmt::format("{} (given with --params)", c.params.name);
  } else {
    std::optional<LogGPSParams> best;
    for (const auto& f : list_params(dir)) {
      LogGPSParams p = load_params(f);
      if (p.library == facts.library && p.transport == facts.transport) {
        bool calibrated = p.description.find("calibrated") != std::string::npos;
        if (!best || calibrated) best = p;
      }
    }
    if (best) {
      c.params = *best;
      c.why = fmt::format("{}: the set for {} over {}", c.params.name, facts.library, facts.transport);
    } else {
      if (!std::filesystem::exists(dir / "openmpi-tcp-loopback.toml"))
        throw ParamError(fmt::format("no LogGPS parameter sets in {} (set MPIADVISE_PARAMS_DIR, or give --params FILE)",
                                     dir.string()));
      c.params = find_params("openmpi-tcp-loopback", dir);
      c.why = fmt::format("{}: no set for {} over {} in {}; the closest is the one measured on TCP", c.params.name,
                          facts.library.empty() ? "this library" : facts.library,
                          facts.transport.empty() ? "this transport" : facts.transport, dir.string());
    }
  }
  bool same_platform = c.params.library == facts.library && c.params.transport == facts.transport;
  if (facts.effective_S && (requested.empty() || same_platform)) {
    c.params.move_S(*facts.effective_S);
    c.why += fmt::format("; S = {} from the log ({})", c.params.S, facts.effective_S_note);
  }
  return c;
}

}  // namespace mpiadvise
