#include "loggps.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>

#include <fmt/format.h>
#include <toml++/toml.h>

namespace mpiadvise {

namespace fs = std::filesystem;

// ---- parameters ----------------------------------------------------------------------------------------
namespace {

// Beyond these a parameter describes no machine, and the replay's sums would lose all precision (or
// overflow) long before they mean anything: a latency or overhead of up to 1000 s, a per-byte cost of
// up to 1 ms per byte, a size of up to 2^62 bytes (or infinite).
constexpr double kMaxTimeNs = 1e12, kMaxPerByteNs = 1e6, kMaxBytes = 4611686018427387904.0;
// [resend]: data sent again costs at most this many times data just written
constexpr double kMaxResendFactor = 10;

double bound_of(const std::string& key) {
  return key == "L" || key == "o" || key == "o_r" || key == "D" || key == "R" ? kMaxTimeNs : kMaxPerByteNs;
}

}  // namespace

void LogGPSParams::validate(const std::string& where) const {
  const std::pair<const char*, double> values[] = {{"L", L},     {"o", o},     {"o_r", o_recv()}, {"D", D},
                                                   {"Oss", Oss}, {"Ors", Ors}, {"Osl", Osl},      {"Orl", Orl},
                                                   {"Gs", Gs},   {"Gl", Gl},   {"R", R}};
  for (const auto& [key, v] : values) {
    if (!std::isfinite(v)) throw ParamError(fmt::format("{}: {} is not a finite number", where, key));
    if (v < 0) throw ParamError(fmt::format("{}: {} = {} is negative", where, key, v));
    if (v > bound_of(key)) throw ParamError(fmt::format("{}: {} = {} is larger than {} allows ({:g})", where, key, v,
                                                        key, bound_of(key)));
  }
  if (persistent_saving && !(std::fabs(*persistent_saving) <= kMaxTimeNs))
    throw ParamError(fmt::format("{}: persistent_saving_ns = {} is not a saving per call (at most {:g} ns either way)",
                                 where, *persistent_saving, kMaxTimeNs));
  for (const auto& [key, v] : {std::pair{"isend_ns", isend_ns}, std::pair{"irecv_ns", irecv_ns}})
    if (v && !(*v >= 0 && *v <= kMaxTimeNs))
      throw ParamError(fmt::format("{}: {} = {} is not a time from 0 to {:g} ns", where, key, *v, kMaxTimeNs));
  if (s > S)
    throw ParamError(fmt::format("{}: s = {} is larger than S = {} (a single packet cannot exceed the eager limit)",
                                 where, s, S));
}

LogGPSParams LogGPSParams::scaled(double f) const {
  LogGPSParams p = *this;
  for (double LogGPSParams::*x : {&LogGPSParams::L, &LogGPSParams::o, &LogGPSParams::D, &LogGPSParams::Oss, &LogGPSParams::Ors,
                                  &LogGPSParams::Osl, &LogGPSParams::Orl, &LogGPSParams::Gs, &LogGPSParams::Gl,
                                  &LogGPSParams::R, &LogGPSParams::Oss_raised, &LogGPSParams::Ors_raised,
                                  &LogGPSParams::R_large, &LogGPSParams::Osl_large, &LogGPSParams::Orl_large})
    p.*x *= f;
  for (std::optional<double> LogGPSParams::*x :
       {&LogGPSParams::o_r, &LogGPSParams::isend_ns, &LogGPSParams::irecv_ns, &LogGPSParams::persistent_saving})
    if (p.*x) *(p.*x) *= f;
  return p;
}

double log_speed_at(double k, const std::vector<uint64_t>& sizes, const std::vector<double>& log_ratio) {
  const auto x = [](double b) { return std::log1p(b); };
  if (k <= static_cast<double>(sizes.front())) return log_ratio.front();
  for (size_t i = 1; i < sizes.size(); i++)
    if (k <= static_cast<double>(sizes[i])) {
      const double a = x(static_cast<double>(sizes[i - 1])), b = x(static_cast<double>(sizes[i]));
      const double t = b > a ? (x(k) - a) / (b - a) : 1;
      return log_ratio[i - 1] + t * (log_ratio[i] - log_ratio[i - 1]);
    }
  return log_ratio.back();
}

LogGPSParams LogGPSParams::resent(double f, bool rendezvous) const {
  LogGPSParams p = *this;
  for (double LogGPSParams::*x : {&LogGPSParams::Oss, &LogGPSParams::Ors, &LogGPSParams::Osl, &LogGPSParams::Orl,
                                  &LogGPSParams::Gs, &LogGPSParams::Gl, &LogGPSParams::Oss_raised,
                                  &LogGPSParams::Ors_raised, &LogGPSParams::Osl_large, &LogGPSParams::Orl_large})
    p.*x *= f;
  if (rendezvous) p.R *= f, p.R_large *= f;
  p.resend_buffered.reset();
  p.resend_rendezvous.reset();
  p.resend_cached_bytes.reset();
  return p;
}

const LogGPS& ResentModels::beyond_cache(uint64_t bytes, bool buffered) const {
  const double f = (buffered ? set_.resend_buffered : set_.resend_rendezvous).value_or(1);
  const int64_t step = std::llround(resent_factor(f, bytes, set_.resend_cached_bytes) * kFactorSteps);
  auto it = beyond_.find({step, buffered});
  if (it == beyond_.end())
    it = beyond_.emplace(std::pair{step, buffered}, LogGPS(set_.resent(static_cast<double>(step) / kFactorSteps, !buffered))).first;
  return it->second;
}

void LogGPSParams::set(const std::string& key, double value, const std::string& where) {
  const bool size = key == "s" || key == "S";
  if (std::isnan(value) || value < 0 || (!size && std::isinf(value)))
    throw ParamError(fmt::format("{}: {} = {} must be a non-negative finite number", where, key, value));
  if (!size && value > bound_of(key))
    throw ParamError(fmt::format("{}: {} = {} is larger than {} allows ({:g})", where, key, value, key, bound_of(key)));
  auto as_bytes = [&]() -> uint64_t {
    if (std::isinf(value) || value >= 1.8e19) return kInfinite;  // "inf" in files and options
    if (value > kMaxBytes)
      throw ParamError(fmt::format("{}: {} = {} is larger than 2^62 bytes (write inf for no limit)", where, key, value));
    if (value != std::floor(value)) throw ParamError(fmt::format("{}: {} = {} must be a whole number of bytes", where, key, value));
    return static_cast<uint64_t>(value);
  };
  if (key == "L") L = value;
  else if (key == "o") o = value;
  else if (key == "o_r") o_r = value;
  else if (key == "D") D = value;
  else if (key == "Oss") Oss = value;
  else if (key == "Ors") Ors = value;
  else if (key == "Osl") Osl = value;
  else if (key == "Orl") Orl = value;
  else if (key == "Gs") Gs = value;
  else if (key == "Gl") Gl = value;
  else if (key == "R") R = value;
  else if (key == "s") s = as_bytes(), s_set.reset();  // an s given prices every message
  else if (key == "S") S = as_bytes();
  else
    throw ParamError(fmt::format("{}: unknown parameter '{}' (the LogGPS parameters are L, o, o_r, D, Oss, Ors, Osl, Orl, Gs, Gl, R, s, S)",
                                 where, key));
}

namespace {

// Each parameter as it is spelled in the files, with its unit in the name.
struct Key {
  const char* file_key;
  const char* name;
  bool optional = false;  // absent: R and D 0, o_r o' (the paper's sets have no such terms)
};
constexpr Key kKeys[] = {{"L_ns", "L"},
                         {"o_ns", "o"},
                         {"o_r_ns", "o_r", true},
                         {"D_ns", "D", true},
                         {"Oss_ns_per_byte", "Oss"},
                         {"Ors_ns_per_byte", "Ors"},
                         {"Osl_ns_per_byte", "Osl"},
                         {"Orl_ns_per_byte", "Orl"},
                         {"Gs_ns_per_byte", "Gs"},
                         {"Gl_ns_per_byte", "Gl"},
                         {"R_ns", "R", true},
                         {"s_bytes", "s"},
                         {"S_bytes", "S"}};

// A table of terms that apply above a size ([raised], [large]): from_bytes, and each key a field of p,
// a time (ns) or a cost per byte.
struct SizeTableKey {
  const char* key;
  double LogGPSParams::*field;
  bool time;
};
// to: where the table has a to_bytes (the size up to which it applies), else null.
void read_size_table(const toml::table& table, const char* name, const char* from_means, std::optional<uint64_t>& from,
                     std::initializer_list<SizeTableKey> keys, LogGPSParams& p, const std::string& where,
                     std::optional<uint64_t>* to = nullptr) {
  std::string known = to ? "from_bytes, to_bytes" : "from_bytes";
  for (const auto& k : keys) known += std::string(", ") + k.key;
  for (const auto& [k, v] : table) {
    const std::string key(k.str());
    if (key == "from_bytes" || (to && key == "to_bytes")) {
      std::optional<int64_t> value = v.value_exact<int64_t>();
      if (!value || *value < 0 || static_cast<double>(*value) > kMaxBytes)
        throw ParamError(fmt::format("{}: [{}] {}: not a whole number of bytes from 0 to 2^62", where, name, key));
      (key == "from_bytes" ? from : *to) = static_cast<uint64_t>(*value);
      continue;
    }
    const SizeTableKey* found = nullptr;
    for (const auto& candidate : keys)
      if (key == candidate.key) found = &candidate;
    if (!found) throw ParamError(fmt::format("{}: [{}] {}: unknown key (the keys are {})", where, name, key, known));
    const double bound = found->time ? kMaxTimeNs : kMaxPerByteNs;
    std::optional<double> value = v.value<double>();
    if (!value || !std::isfinite(*value) || *value < 0 || *value > bound)
      throw ParamError(fmt::format("{}: [{}] {}: not a {} from 0 to {:g} ns", where, name, key,
                                   found->time ? "time" : "cost per byte", bound));
    p.*(found->field) = *value;
  }
  if (!from) throw ParamError(fmt::format("{}: [{}] has no from_bytes ({})", where, name, from_means));
  if (to && *to && **to <= *from)
    throw ParamError(fmt::format("{}: [{}] to_bytes = {} is not above from_bytes = {}", where, name, **to, *from));
}

}  // namespace

LogGPSParams load_params(const fs::path& file) {
  const std::string where = file.string();
  toml::table doc;
  try {
    doc = toml::parse_file(where);
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    throw ParamError(fmt::format("{}:{}:{}: {}", where, at.line, at.column, e.description()));
  }
  LogGPSParams p;
  p.name = file.stem().string();
  p.description = doc["description"].value_or(std::string());
  p.library = doc["library"].value_or(std::string());
  p.transport = doc["transport"].value_or(std::string());
  const toml::table* model = doc["loggps"].as_table();
  if (!model) throw ParamError(where + ": no [loggps] table");
  for (const auto& [k, v] : *model) {
    std::string key(k.str());
    const Key* known = nullptr;
    for (const auto& kk : kKeys)
      if (key == kk.file_key) known = &kk;
    if (!known) {
      std::string names;
      for (const auto& kk : kKeys) names += std::string(names.empty() ? "" : ", ") + kk.file_key;
      throw ParamError(fmt::format("{}: [loggps] {}: unknown key (the keys are {})", where, key, names));
    }
    std::optional<double> value = v.value<double>();
    if (!value) {
      if (auto str = v.value<std::string>(); str && (*str == "inf" || *str == "infinity"))
        value = std::numeric_limits<double>::infinity();
      else throw ParamError(fmt::format("{}: [loggps] {}: not a number", where, key));
    }
    p.set(known->name, *value, where + ": [loggps] " + key);
  }
  for (const auto& kk : kKeys)
    if (!kk.optional && !model->contains(kk.file_key)) throw ParamError(fmt::format("{}: [loggps] {} is missing", where, kk.file_key));
  if (const toml::table* mpi = doc["mpi"].as_table()) {
    for (const auto& [k, v] : *mpi) {
      std::string key(k.str());
      if (key != "persistent_saving_ns" && key != "reduce_ns_per_byte" && key != "isend_ns" && key != "irecv_ns")
        throw ParamError(fmt::format(
            "{}: [mpi] {}: unknown key (the keys are persistent_saving_ns, reduce_ns_per_byte, isend_ns, irecv_ns)",
            where, key));
      std::optional<double> value = v.value<double>();
      if (!value || !std::isfinite(*value)) throw ParamError(fmt::format("{}: [mpi] {}: not a number", where, key));
      if (key == "persistent_saving_ns") {
        p.persistent_saving = *value;
      } else if (key == "isend_ns" || key == "irecv_ns") {
        if (*value < 0 || *value > kMaxTimeNs)
          throw ParamError(fmt::format("{}: [mpi] {} = {} is not a time from 0 to {:g} ns", where, key, *value, kMaxTimeNs));
        (key == "isend_ns" ? p.isend_ns : p.irecv_ns) = *value;
      } else {
        if (*value < 0) throw ParamError(fmt::format("{}: [mpi] {} = {} is negative", where, key, *value));
        p.reduce_ns_per_byte = *value;
      }
    }
  }
  if (const toml::table* eager = doc["eager"].as_table()) {
    for (const auto& [k, v] : *eager) {
      std::string key(k.str());
      if (key != "buffer_bytes" && key != "buffer_messages" && key != "header_bytes")
        throw ParamError(fmt::format("{}: [eager] {}: unknown key (the keys are buffer_bytes, buffer_messages, header_bytes)",
                                     where, key));
      std::optional<int64_t> value = v.value_exact<int64_t>();
      if (!value || *value < 0 || static_cast<double>(*value) > kMaxBytes)
        throw ParamError(fmt::format("{}: [eager] {}: not a whole number of {} from 0 to 2^62", where, key,
                                     key == "buffer_messages" ? "messages" : "bytes"));
      const auto n = static_cast<uint64_t>(*value);
      if (key == "buffer_bytes") p.eager_buffer_bytes = n;
      else if (key == "buffer_messages") p.eager_buffer_messages = n;
      else p.eager_header_bytes = n;
    }
  }
  if (const toml::table* machine = doc["machine"].as_table()) {
    for (const auto& [k, v] : *machine) {
      std::string key(k.str());
      if (key != "speeds_ratio" && key != "slow_share" && key != "speeds")
        throw ParamError(
            fmt::format("{}: [machine] {}: unknown key (the keys are speeds_ratio, slow_share, speeds)", where, key));
      std::optional<double> value = v.value<double>();
      if (key == "speeds") {
        const toml::array* list = v.as_array();
        if (!list) throw ParamError(fmt::format("{}: [machine] speeds: not a list of factors", where));
        for (const auto& x : *list) {
          const std::optional<double> f = x.value<double>();
          if (!f || !(*f >= 0.01 && *f <= 100))
            throw ParamError(fmt::format("{}: [machine] speeds: each factor on the set's times is a number from 0.01 to 100", where));
          p.speeds.push_back(*f);
        }
      } else if (key == "speeds_ratio") {
        if (!value || !(*value >= 1 && *value <= 100))
          throw ParamError(fmt::format("{}: [machine] speeds_ratio: not a number from 1 to 100", where));
        p.speeds_ratio = *value;
      } else {
        if (!value || !(*value >= 0 && *value <= 1))
          throw ParamError(fmt::format("{}: [machine] slow_share: not a share from 0 to 1", where));
        p.slow_share = *value;
      }
    }
    if (!p.speeds_ratio) throw ParamError(fmt::format("{}: [machine] speeds_ratio is missing", where));

  }
  if (const toml::table* resend = doc["resend"].as_table()) {
    for (const auto& [k, v] : *resend) {
      std::string key(k.str());
      if (key == "cached_bytes") {
        const std::optional<int64_t> bytes = v.value<int64_t>();
        if (!bytes || *bytes < 1024 || static_cast<double>(*bytes) > kMaxBytes)
          throw ParamError(fmt::format("{}: [resend] cached_bytes: not a whole number of bytes from 1024 to 2^62", where));
        p.resend_cached_bytes = static_cast<uint64_t>(*bytes);
        continue;
      }
      if (key != "buffered_factor" && key != "rendezvous_factor")
        throw ParamError(fmt::format(
            "{}: [resend] {}: unknown key (the keys are buffered_factor, rendezvous_factor, cached_bytes)", where, key));
      const std::optional<double> value = v.value<double>();
      if (!value) throw ParamError(fmt::format("{}: [resend] {}: not a number", where, key));
      if (!(*value >= 0 && *value <= kMaxResendFactor))
        throw ParamError(fmt::format("{}: [resend] {} = {}: not a number from 0 to {:g} (a multiple of what data just "
                                     "written costs)", where, key, *value, kMaxResendFactor));
      (key == "buffered_factor" ? p.resend_buffered : p.resend_rendezvous) = *value;
    }
  }
  if (const toml::table* raised = doc["raised"].as_table())
    read_size_table(*raised, "raised", "the size above which its costs apply", p.raised_from,
                    {{"Oss_ns_per_byte", &LogGPSParams::Oss_raised, false}, {"Ors_ns_per_byte", &LogGPSParams::Ors_raised, false}},
                    p, where, &p.raised_to);
  if (const toml::table* large = doc["large"].as_table())
    read_size_table(*large, "large", "the size above which its protocol applies", p.large_from,
                    {{"R_ns", &LogGPSParams::R_large, true},
                     {"Osl_ns_per_byte", &LogGPSParams::Osl_large, false},
                     {"Orl_ns_per_byte", &LogGPSParams::Orl_large, false}},
                    p, where);
  p.validate(where);
  return p;
}

fs::path default_params_dir() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (const char* env = std::getenv("MPIADVISE_PARAMS_DIR"); env && *env) return env;
  if (!ec) {
    for (fs::path up = self.parent_path(); !up.empty() && up != up.root_path(); up = up.parent_path()) {
      if (fs::is_directory(up / "share" / "params")) return up / "share" / "params";
      if (fs::is_directory(up / "share" / "mpiadvise" / "params")) return up / "share" / "mpiadvise" / "params";
    }
  }
#ifdef MPIADVISE_PREFIX
  return fs::path(MPIADVISE_PREFIX) / "share" / "mpiadvise" / "params";
#else
  return "/usr/local/share/mpiadvise/params";
#endif
}

std::vector<fs::path> list_params(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".toml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

LogGPSParams find_params(const std::string& name_or_file, const fs::path& dir) {
  fs::path asked(name_or_file);
  if (fs::exists(asked) && !fs::is_directory(asked)) return load_params(asked);
  fs::path named = dir / (name_or_file + ".toml");
  if (fs::exists(named)) return load_params(named);
  std::string known;
  for (const auto& f : list_params(dir)) known += (known.empty() ? "" : ", ") + f.stem().string();
  throw ParamError(fmt::format("--params {}: no such file, and no parameter set of that name in {} (known: {})",
                               name_or_file, dir.string(), known.empty() ? "none" : known));
}

// ---- the model -------------------------------------------------------------------------------------------
// inline: every term of every message asks for it, and the checks fold into each caller's
inline LogGPS::PerByte LogGPS::per_byte(bool long_protocol, double gap, int senders, uint64_t k) const {
  const bool raised = !long_protocol && p_.raised_from && k > *p_.raised_from;
  const bool second = long_protocol && large(k);
  PerByte b{long_protocol ? (second ? p_.Osl_large : p_.Osl) : raised ? p_.Oss_raised : p_.Oss, gap,
            long_protocol ? (second ? p_.Orl_large : p_.Orl) : raised ? p_.Ors_raised : p_.Ors};
  if (senders > 1) {
    // contention: p senders share the receiver's bandwidth; the largest of the three holds it
    double* largest = &b.os;
    if (b.g > *largest) largest = &b.g;
    if (b.orv > *largest) largest = &b.orv;
    *largest *= senders;
  }
  return b;
}

double LogGPS::T1(uint64_t k, int senders) const { return p_.o + k * per_byte(false, p_.Gs, senders, k).os; }
double LogGPS::T1p(uint64_t k, int senders) const { return p_.o + k * per_byte(true, p_.Gl, senders, k).os; }
double LogGPS::T2(uint64_t k, int senders) const { return k * per_byte(false, p_.Gs, senders, k).g + p_.L; }
double LogGPS::T2p(uint64_t k, int senders) const {
  double gs = per_byte(false, p_.Gs, senders).g, gl = per_byte(true, p_.Gl, senders, k).g;
  uint64_t s = std::min(k > p_.S && p_.s_set ? *p_.s_set : p_.s, k);
  return s * gs + (k - s) * gl + p_.L;
}
double LogGPS::T3(uint64_t k, int senders) const { return p_.o_recv() + k * per_byte(false, p_.Gs, senders, k).orv; }
double LogGPS::T3p(uint64_t k, int senders) const { return p_.o_recv() + k * per_byte(true, p_.Gl, senders, k).orv; }
double LogGPS::T4(double tr_minus_ts) const { return std::max(p_.o + p_.L, tr_minus_ts) + p_.o; }
double LogGPS::T5(uint64_t k) const { return p_.o + p_.L + p_.o + p_.R + (large(k) ? p_.R_large : 0.0); }
double LogGPS::transfer(uint64_t k, int senders) const { return single_packet(k) ? T2(k, senders) : T2p(k, senders); }

double LogGPS::communication(uint64_t k, double ts, double tr, int senders) const {
  if (single_packet(k)) return T1(k, senders) + T2(k, senders) + T3(k, senders);  // (1)
  if (eager(k)) return T1(k, senders) + T2p(k, senders) + T3(k, senders);          // (2)
  return T4(tr - ts) + T5(k) + T1p(k, senders) + T2p(k, senders) + T3p(k, senders); // (3)
}

double LogGPS::send(uint64_t k, double ts, double tr, int senders) const {
  if (eager(k)) return T1(k, senders);                  // (4)
  return T4(tr - ts) + T5(k) + T1p(k, senders);         // (5)
}

double LogGPS::synchronous_send(uint64_t k, double ts, double tr, int senders) const {
  return T4(tr - ts) + T5(k) + T1p(k, senders);
}

double LogGPS::recv(uint64_t k, double ts, double tr, int senders) const {
  double late = tr - ts;
  if (eager(k)) {  // (7), (8), and D when the data came first
    const double in_flight = T1(k, senders) + transfer(k, senders);
    return std::max(in_flight - late, 0.0) + T3(k, senders) + late_receive(ts + in_flight, tr);
  }
  return std::max(p_.o + p_.L - late, 0.0) + p_.o + T5(k) + T1p(k, senders) + T2p(k, senders) + T3p(k, senders);  // (9)
}

double LogGPS::wait(double t_blocking, double tw_minus_ti) const {
  return std::max(t_blocking - tw_minus_ti, p_.o);  // (11), erratum applied
}

SideCost LogGPS::send_side(uint64_t k, double ts, double tr, int senders, bool synchronous) const {
  SideCost c;
  if (!send_waits_for_receive(k, synchronous)) {  // (4)
    c.overhead = T1(k, senders);
    c.done = ts + c.overhead;
    return c;
  }
  // (5): T4 is the REQ's way and the wait for the receive beyond it, T5 the ACK's way back
  double t4 = T4(tr - ts), t5 = T5(k);
  c.wait = send_wait(k, ts, tr, synchronous);
  c.synchronisation = t4 - c.wait + t5;
  c.overhead = T1p(k, senders);
  c.done = ts + t4 + t5 + c.overhead;
  return c;
}

SideCost LogGPS::recv_side(uint64_t k, double ts, double tr, int senders, bool synchronous) const {
  SideCost c;
  if (!send_waits_for_receive(k, synchronous)) {  // (7), (8): the data arrives at ts + T1 + T2(')
    const double arrival = eager_arrival(k, ts, senders);
    c.wait = std::max(0.0, arrival - tr);
    c.overhead = T3(k, senders) + late_receive(arrival, tr);
  } else {  // (9): the REQ reaches the receiver, the ACK goes back, then the data
    c.wait = recv_wait(k, ts, tr, synchronous);
    c.synchronisation = p_.o + T5(k) + T1p(k, senders) + T2p(k, senders);
    c.overhead = T3p(k, senders);
  }
  c.done = tr + c.wait + c.synchronisation + c.overhead;
  return c;
}

uint64_t LogGPS::chunks_buffered(uint64_t c) const {
  uint64_t n = std::numeric_limits<uint64_t>::max();
  if (p_.eager_buffer_bytes) n = std::min(n, *p_.eager_buffer_bytes / std::max<uint64_t>(buffered_bytes(c), 1));
  if (p_.eager_buffer_messages) n = std::min(n, *p_.eager_buffer_messages);
  return std::max<uint64_t>(n, 1);  // the first chunk always goes: a buffer too small for it still passes one
}

// The chunks in step (chunk i starts at S_i, arrives at A_i, is taken by the receiver from R_i; B chunks
// fit the buffer): S_i = ts + i T1 for i < B, then S_i = max(S_(i-1) + T1, R_(i-B) + T3); R_0 = max(tr, A_0),
// R_i = max(R_(i-1) + T3, A_i). In step the cycle is the slower of the two sides' overheads (or a chunk's
// round through the buffer shared by B chunks), which gives the last chunk's times in closed form.
namespace {
struct SplitTimes {
  double last_start, last_taken, t1, t3;
  uint64_t n;
};
SplitTimes split_times(const LogGPS& m, uint64_t k, uint64_t chunk, double ts, double tr, int senders) {
  SplitTimes st;
  st.n = m.chunks(k, chunk);
  st.t1 = m.T1(chunk, senders);
  st.t3 = m.T3(chunk, senders);
  const double tx = m.transfer(chunk, senders);
  const uint64_t b = m.chunks_buffered(chunk);
  st.last_start = ts + (st.n - 1) * st.t1;
  if (st.n > b) {
    const double cycle = std::max({st.t1, st.t3, (st.t3 + st.t1 + tx) / static_cast<double>(b)});
    const double first_taken = std::max(tr, ts + st.t1 + tx);
    st.last_start = std::max(st.last_start, first_taken + st.t3 + (st.n - 1 - b) * cycle);
  }
  st.last_taken = std::max(tr + (st.n - 1) * st.t3, st.last_start + st.t1 + tx);
  return st;
}
}  // namespace

SideCost LogGPS::split_send_side(uint64_t k, uint64_t chunk, double ts, double tr, int senders) const {
  SplitTimes st = split_times(*this, k, chunk, ts, tr, senders);
  SideCost c;
  c.overhead = st.n * st.t1;
  c.done = st.last_start + st.t1;
  c.wait = std::max(0.0, c.done - ts - c.overhead);  // for room in the buffer
  return c;
}

SideCost LogGPS::split_recv_side(uint64_t k, uint64_t chunk, double ts, double tr, int senders) const {
  SplitTimes st = split_times(*this, k, chunk, ts, tr, senders);
  SideCost c;
  c.overhead = st.n * st.t3;
  c.done = st.last_taken + st.t3;
  c.wait = std::max(0.0, c.done - tr - c.overhead);
  return c;
}

double LogGPS::send_wait(uint64_t k, double ts, double tr, bool synchronous) const {
  return send_waits_for_receive(k, synchronous) ? std::max(0.0, tr - ts - p_.o - p_.L) : 0.0;
}

double LogGPS::recv_wait(uint64_t k, double ts, double tr, bool synchronous) const {
  if (!send_waits_for_receive(k, synchronous)) return std::max(0.0, eager_arrival(k, ts) - tr);  // (7), (8)
  return std::max(0.0, p_.o + p_.L - (tr - ts));                                                     // (9)
}

double LogGPS::round_trip(uint64_t k, double w) const {
  if (eager(k)) {  // (12), (13)
    // how long the computing side waited for its message (negative: how long the message waited for it)
    const double waited = T1(k) + 2 * transfer(k) + T3(k) - w;
    return std::max(waited, 0.0) + w + T1(k) + T3(k) + (waited < 0 ? p_.D : 0.0);
  }
  double t4 = T4(0);  // the REQ of each direction meets a receiver already waiting
  return std::max(T2p(k) + T3p(k) + p_.o + p_.L - w, 0.0) + w + 2 * T1p(k) + T2p(k) + T3p(k) + 2 * t4 + 2 * T5(k) -
         (p_.o + p_.L);                                                                                 // (14)
}

}  // namespace mpiadvise
