#include "run_facts.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace mpiadvise {

namespace {

// Bytes of headers that Open MPI's ob1 counts in a BTL's eager limit (sizeof(mca_pml_ob1_hdr_t), taken
// from btl_eager_limit in mca_pml_ob1_send_request_start_btl): measured on loopback TCP with a receiver
// 20 ms late (btl_tcp_eager_limit 65536: a 65480-byte send returned at once, a 65481-byte one waited;
// with 4096: 4040 and 4041), and over vader by where its protocols change (below).
constexpr uint64_t kOb1HeaderBytes = 56;

std::optional<uint64_t> cvar(const nlohmann::json& h, const std::string& name) {
  const auto& cv = h.value("cvars", nlohmann::json::object());
  if (!cv.contains(name)) return std::nullopt;
  const auto& v = cv[name];
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

// A component selection as Open MPI's OMPI_MCA_btl and UCX's UCX_TLS both write it: a comma-separated
// list of the ones to use, or with a leading ^ of the ones to leave out. all: every name counts as listed.
struct Selection {
  bool exclude = false;
  std::set<std::string> named;
  explicit Selection(const std::string& list) : exclude(!list.empty() && list[0] == '^') {
    for (size_t at = exclude ? 1 : 0; at <= list.size();) {
      size_t comma = list.find(',', at);
      if (comma == std::string::npos) comma = list.size();
      if (comma > at) named.insert(list.substr(at, comma - at));
      at = comma + 1;
    }
  }
  // whether any of names may be used
  bool allows(std::initializer_list<const char*> names) const {
    for (const char* n : names)
      if (exclude ? named.count(n) == 0 : named.count(n) > 0 || named.count("all") > 0) return true;
    return false;
  }
};

// UCX's memory units as its configuration parser reads them: a number with an optional k, m, g (powers
// of 1024; a trailing b allowed), or "inf"; nullopt for anything else, "auto" included.
std::optional<uint64_t> ucx_memunits(std::string v) {
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v == "inf") return LogGPSParams::kInfinite;
  if (!v.empty() && v.back() == 'b') v.pop_back();
  uint64_t unit = 1;
  if (!v.empty() && (v.back() == 'k' || v.back() == 'm' || v.back() == 'g')) {
    unit = v.back() == 'k' ? 1ull << 10 : v.back() == 'm' ? 1ull << 20 : 1ull << 30;
    v.pop_back();
  }
  if (v.empty() || v.size() > 12 || v.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoull(v) * unit;
}

// MPICH's ch4 device over UCX (Debian's MPICH 4.0): the eager/rendezvous switch is UCX's, not an MPICH
// cvar (the ch3 CH3_EAGER_MAX_MSG_SIZE that MPI_T still lists changes nothing there; measured). Measured
// here with mpiadvise calibrate (a receiver 20 ms late): UCX_RNDV_THRESH=N makes sends up to N - 1 bytes
// eager (16384, 65536, 10000 and 10k alike, over TCP and shared memory); left at "auto", the largest
// eager send was 8191 bytes over TCP and 8255 over shared memory, one less than UCX's fragment sizes
// UCX_TCP_TX_SEG_SIZE (8K) and UCX_POSIX_SEG_SIZE (8256) as `ucx_info -c` prints their defaults.
void ucx_facts(const nlohmann::json& env, size_t nhosts, RunFacts& f) {
  const Selection tls(env.value("UCX_TLS", "all"));  // UCX's default: every transport
  const bool shared_memory = nhosts <= 1 && tls.allows({"sm", "shm", "posix", "sysv", "xpmem", "knem", "cma"});
  f.transport = shared_memory ? "ucx-sm" : tls.allows({"tcp"}) ? "ucx-tcp" : "unknown";
  f.eager_setting = "UCX_RNDV_THRESH";
  f.setting_overhead = 1;
  const std::string thresh = env.value("UCX_RNDV_THRESH", "auto");
  if (auto v = ucx_memunits(thresh); v && *v > 0) {
    f.configured_S = v;
    f.effective_S = *v == LogGPSParams::kInfinite ? *v : *v - 1;
    f.effective_S_note = fmt::format("UCX_RNDV_THRESH {}: sends from {} bytes go by rendezvous", thresh, *v);
  } else if (f.transport != "unknown") {
    f.configured_text = thresh;
    const char* seg_name = shared_memory ? "UCX_POSIX_SEG_SIZE" : "UCX_TCP_TX_SEG_SIZE";
    auto seg = ucx_memunits(env.value(seg_name, shared_memory ? "8256" : "8k"));
    if (seg && *seg > 1) {
      f.effective_S = *seg - 1;
      f.effective_S_note = fmt::format("UCX_RNDV_THRESH {}: the largest eager send is one byte less than {} ({}), "
                                       "as measured here", thresh, seg_name, *seg);
    }
  }
}

}  // namespace

RunFacts run_facts(const JobLog& job) {
  std::set<std::string> hosts;
  for (const auto& r : job.ranks()) hosts.insert(r->hostname());
  if (job.ranks().empty()) {
    RunFacts f;
    f.hosts.assign(hosts.begin(), hosts.end());
    return f;
  }
  // the tracer reads MPI_T's control variables on rank 0 only: the first header that has them
  const RankLog* h = job.ranks().front().get();
  for (const auto& r : job.ranks())
    if (r->header_key("cvars")) {
      h = r.get();
      break;
    }
  return run_facts(h->header(), std::vector<std::string>(hosts.begin(), hosts.end()));
}

RunFacts run_facts(const nlohmann::json& h, const std::vector<std::string>& hosts_in) {
  RunFacts f;
  std::set<std::string> hosts(hosts_in.begin(), hosts_in.end());
  f.hosts.assign(hosts.begin(), hosts.end());
  std::string lib = h.value("mpi_library", "");
  if (lib.find("Open MPI") != std::string::npos) {
    f.library = "Open MPI";
    auto v = lib.find(" v");
    if (v != std::string::npos) f.library_version = lib.substr(v + 2, lib.find_first_of(", ", v + 2) - v - 2);
  } else if (lib.find("MPICH") != std::string::npos) {
    f.library = "MPICH";
    // "MPICH Version:\t4.0.2\nMPICH Release date: ...\nMPICH Device:\tch4:ucx\n..."
    auto field = [&](const std::string& key) {
      auto at = lib.find(key);
      if (at == std::string::npos) return std::string();
      at = lib.find_first_not_of(" \t", at + key.size());
      return at == std::string::npos ? std::string() : lib.substr(at, lib.find_first_of(" \t\r\n", at) - at);
    };
    f.library_version = field("MPICH Version:");
    f.device = field("MPICH Device:");
    // src/mpid/ch4/subconfigure.m4: --with-ch4-shmmods defaults to auto, which is none over UCX, posix
    // otherwise; none or no (or --without-ch4-shmmods) leaves the module out
    std::string shmmods = field("--with-ch4-shmmods=");
    if (lib.find("--without-ch4-shmmods") != std::string::npos) shmmods = "none";
    if (shmmods.empty() || shmmods == "auto") shmmods = f.device == "ch4:ucx" ? "none" : "posix";
    f.mpich_shm_collectives = f.device.rfind("ch4", 0) == 0 && shmmods != "none" && shmmods != "no";
  } else {
    f.library = lib.substr(0, lib.find(','));
  }
  const auto env = h.value("env", nlohmann::json::object());
  std::string pml = env.value("OMPI_MCA_pml", ""), btl = env.value("OMPI_MCA_btl", "");
  if (f.library == "Open MPI") {
    // OMPI_MCA_btl unset: every BTL Open MPI has
    const bool shared_memory = btl.empty() || Selection(btl).allows({"vader", "sm"});
    if (pml == "ucx") ucx_facts(env, hosts.size(), f);
    else if (hosts.size() <= 1 && shared_memory) f.transport = "vader";
    else f.transport = "tcp";
    if (f.transport == "tcp") {
      f.eager_setting = "btl_tcp_eager_limit";
      f.configured_S = cvar(h, "btl_tcp_eager_limit");
      f.setting_overhead = kOb1HeaderBytes;
      if (f.configured_S && *f.configured_S > kOb1HeaderBytes) {
        f.effective_S = *f.configured_S - kOb1HeaderBytes;
        f.effective_S_note = fmt::format("btl_tcp_eager_limit {} less {} bytes of headers", *f.configured_S,
                                         kOb1HeaderBytes);
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
      // above the eager limit less ob1's headers (the same 56 bytes: measured here, a 4040-byte round trip
      // took 1.0 us and a 4041-byte one 6.7 us), ob1's rendezvous has the receiver copy the data by CMA
      if (f.configured_S && *f.configured_S > kOb1HeaderBytes) {
        f.large_from = *f.configured_S - kOb1HeaderBytes;
        f.large_from_note = fmt::format("btl_vader_eager_limit {} less {} bytes of headers: above it the receiver copies "
                                        "the data by CMA", *f.configured_S, kOb1HeaderBytes);
      }
      if (auto inline_send = cvar(h, "btl_vader_max_inline_send")) {
        f.effective_S = f.configured_S ? std::min(*inline_send, *f.configured_S) : *inline_send;
        f.effective_S_note = fmt::format("btl_vader_max_inline_send {}: on shared memory a larger send can wait for its "
                                         "receiver whatever btl_vader_eager_limit says", *inline_send);
      }
    }
  } else if (f.library == "MPICH" && f.device.rfind("ch4:ucx", 0) == 0) {
    ucx_facts(env, hosts.size(), f);
  } else if (f.library == "MPICH") {
    // Elsewhere MPICH's eager limit is a control variable of its device: ch3's CH3_EAGER_MAX_MSG_SIZE,
    // ch4 OFI's CH4_OFI_EAGER_MAX_MSG_SIZE (set as MPIR_CVAR_<name>); MPI_T may list the other device's
    // too, so the device's own is taken when the version string names the device
    f.transport = "unknown";
    const std::string want = f.device.rfind("ch3", 0) == 0 ? "CH3_" : f.device.rfind("ch4:ofi", 0) == 0 ? "CH4_OFI_" : "";
    const nlohmann::json cvars = h.value("cvars", nlohmann::json::object());  // items() of a temporary dangles
    for (const auto& [name, value] : cvars.items()) {
      std::string bare = name.rfind("MPIR_CVAR_", 0) == 0 ? name.substr(10) : name;
      if (bare.find("EAGER_MAX_MSG_SIZE") == std::string::npos || bare.rfind(want, 0) != 0) continue;
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
  if (facts.large_from && c.params.large_from && same_platform && *facts.large_from != *c.params.large_from) {
    c.params.large_from = *facts.large_from;
    c.why += fmt::format("; the second rendezvous protocol above {} bytes from the log ({})", *facts.large_from,
                         facts.large_from_note);
  }
  return c;
}

void replay_library(const RunFacts& facts, ReplayOptions& o) {
  o.mpi_library = facts.library;
  o.mpich_shm_collectives = facts.mpich_shm_collectives;
}

}  // namespace mpiadvise
