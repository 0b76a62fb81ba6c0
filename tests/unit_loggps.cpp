// The LogGPS model against the paper's own numbers (Ino, Fujimoto, Hagihara 2001; ../shared/docs/loggps.md)
// and parameter files.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "efficiency.hpp"
#include "loggps.hpp"
#include "support.hpp"

using namespace mpiadvise;
using Catch::Detail::Approx;

namespace {

// Parameter files in a directory of their own, removed at the end: a minimal [loggps] table followed by
// the text of each file.
struct ParamFiles {
  std::filesystem::path dir;
  explicit ParamFiles(const std::string& what)
      : dir(std::filesystem::temp_directory_path() / ("mpiadvise-" + what + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir);
  }
  ~ParamFiles() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << "[loggps]\nL_ns = 1\no_ns = 1\nOss_ns_per_byte = 0\nOrs_ns_per_byte = 0\nOsl_ns_per_byte = 0\n"
                                 "Orl_ns_per_byte = 0\nGs_ns_per_byte = 0\nGl_ns_per_byte = 0\ns_bytes = 256\nS_bytes = 256\n"
                              << text;
    return dir / name;
  }
};

}  // namespace
namespace fs = std::filesystem;

namespace {

fs::path params_dir() { return fs::path(MPA_SOURCE_DIR) / "share" / "params"; }

// Parameters where every term differs, so that each equation's terms can be told apart by hand.
LogGPSParams fig2_params() {
  LogGPSParams p;
  p.o = 100;
  p.L = 10;
  p.Oss = 1;
  p.Ors = 2;
  p.Gs = 4;
  p.Osl = 8;
  p.Orl = 16;
  p.Gl = 32;
  p.s = 2;  // Fig. 2: s = 2, S = 4
  p.S = 4;
  return p;
}

fs::path write_params(const std::string& body) {
  fs::path f = mpa_test::fresh_dir("params") / "p.toml";
  std::ofstream(f) << body;
  return f;
}

const char* kComplete = R"([loggps]
L_ns = 850
o_ns = 6730
Oss_ns_per_byte = 5.02
Ors_ns_per_byte = 4.72
Osl_ns_per_byte = 4.80
Orl_ns_per_byte = 3.86
Gs_ns_per_byte = 15.17
Gl_ns_per_byte = 0.04
s_bytes = 8191
S_bytes = 16383
)";

}  // namespace

TEST_CASE("Fig. 2: a 2-byte message is Short (1), a 4-byte one Eager (2), a 5-byte one Rendezvous (3)", "[loggps]") {
  LogGPS m(fig2_params());
  // (1) k <= s: T1 + T2 + T3 = (100 + 2*1) + (2*4 + 10) + (100 + 2*2)
  CHECK(m.communication(2, 0, 0) == Approx(102 + 18 + 104));
  // (2) s < k <= S: T1 + T2' + T3 = (100 + 4*1) + (2*4 + 2*32 + 10) + (100 + 4*2)
  CHECK(m.communication(4, 0, 0) == Approx(104 + 82 + 108));
  // (3) k > S, receiver on time: T4 + T5 + T1' + T2' + T3'
  //     = (max(100 + 10, 0) + 100) + (100 + 10 + 100) + (100 + 5*8) + (2*4 + 3*32 + 10) + (100 + 5*16)
  CHECK(m.communication(5, 0, 0) == Approx(210 + 210 + 140 + 114 + 180));
  // a receiver 1000 ns late: the send-wait enters through T4 = max(o' + L, tr - ts) + o'
  CHECK(m.communication(5, 0, 1000) == Approx(1100 + 210 + 140 + 114 + 180));
  CHECK(m.communication(4, 0, 1000) == Approx(104 + 82 + 108));  // eager: the receiver's delay costs nothing
}

TEST_CASE("Table 4: routine times of MPI_Send, Isend, Recv, Irecv and Wait", "[loggps]") {
  LogGPS m(fig2_params());
  CHECK(m.send(4, 0, 1000) == Approx(104));                  // (4) k <= S: T1 only
  CHECK(m.send(5, 0, 1000) == Approx(1100 + 210 + 140));     // (5) T4 + T5 + T1'
  CHECK(m.isend() == Approx(100));                           // (6)
  CHECK(m.recv(2, 0, 50) == Approx((102 + 18 - 50) + 104));  // (7) max(T1 + T2 - (tr - ts), 0) + T3
  CHECK(m.recv(2, 0, 500) == Approx(104));                   // (7) the data was already there
  CHECK(m.recv(4, 0, 0) == Approx(104 + 82 + 108));          // (8)
  // (9) receiver 500 ns early: max(o' + L - (tr - ts), 0) + o' + T5 + T1' + T2' + T3'
  CHECK(m.recv(5, 500, 0) == Approx((110 + 500) + 100 + 210 + 140 + 114 + 180));
  CHECK(m.irecv() == Approx(100));                           // (10)
  // (11) with the erratum: max(Tblk - (tw - ti), o')
  CHECK(m.wait(500, 300) == Approx(200));
  CHECK(m.wait(500, 450) == Approx(100));
}

TEST_CASE("Myrinet: a message of length S takes 298 us, and 1438 of them 0.43 s", "[loggps][paper]") {
  LogGPSParams p = load_params(params_dir() / "myrinet-mpich-score.toml");
  LogGPS m(p);
  double one = m.communication(p.S, 0, 0);  // (2): T1 + T2' + T3
  CHECK(one / 1e3 == Approx(298.5).margin(0.05));
  CHECK(1438 * one / 1e9 == Approx(0.43).margin(0.005));
}

TEST_CASE("Table 5's three platforms load with their published values", "[loggps][paper]") {
  auto myr = load_params(params_dir() / "myrinet-mpich-score.toml");
  CHECK(myr.L == 850);
  CHECK(myr.o == 6730);
  CHECK(myr.Gs == Approx(15.17));
  CHECK(myr.s == 8191);
  CHECK(myr.S == 16383);
  auto fe = load_params(params_dir() / "fast-ethernet-mpich-score.toml");
  CHECK(fe.L == 24580);
  CHECK(fe.Gl == Approx(65.09));
  CHECK(fe.s == 1023);
  auto cj = load_params(params_dir() / "cenju4-mpich.toml");
  CHECK(cj.Orl + cj.Gl == Approx(0.28));  // the paper gives only the sum
  CHECK(cj.s == 1028);
  CHECK(cj.S == 1028);
  auto tcp = load_params(params_dir() / "openmpi-tcp-loopback.toml");
  CHECK(tcp.library == "Open MPI");
  CHECK(tcp.transport == "tcp");
}

TEST_CASE("R, the rendezvous protocol's own cost, lengthens each message above S once, with the ACK", "[loggps]") {
  LogGPSParams p = fig2_params();
  LogGPS before(p);
  p.R = 5000;
  LogGPS after(p);
  CHECK(after.T5() == Approx(before.T5() + 5000));
  const uint64_t big = p.S + 1, small = p.S;
  // a rendezvous send returns, and its message arrives, R later; an eager one is unchanged
  CHECK(after.send(big, 0, 0) == Approx(before.send(big, 0, 0) + 5000));
  CHECK(after.communication(big, 0, 0) == Approx(before.communication(big, 0, 0) + 5000));
  CHECK(after.send(small, 0, 0) == Approx(before.send(small, 0, 0)));
  // the calibration benchmark's round trip: two rendezvous messages, 2 R
  CHECK(after.round_trip(big, 0) == Approx(before.round_trip(big, 0) + 10000));
}

TEST_CASE("[raised]: eager messages above the library's own limit cost what the raised sweep measured", "[loggps]") {
  std::string text = std::string(kComplete) +
                     "[raised]\nfrom_bytes = 8191\nOss_ns_per_byte = 10.0\nOrs_ns_per_byte = 20.0\n";
  LogGPSParams p = load_params(write_params(text));
  REQUIRE(p.raised_from == 8191u);
  LogGPS m(p);
  // at or below from_bytes the set's own Oss and Ors; above, the raised ones (S 16383 here: still eager)
  CHECK(m.T1(8191) == Approx(p.o + 8191 * p.Oss));
  CHECK(m.T3(8191) == Approx(p.o + 8191 * p.Ors));
  CHECK(m.T1(8192) == Approx(p.o + 8192 * 10.0));
  CHECK(m.T3(8192) == Approx(p.o + 8192 * 20.0));
  // a rendezvous message keeps Osl and Orl
  CHECK(m.T1p(20000) == Approx(p.o + 20000 * p.Osl));
  // bad tables are refused with the key
  CHECK_THROWS_WITH(load_params(write_params(std::string(kComplete) + "[raised]\nOss_ns_per_byte = 1\n")),
                    Catch::Contains("[raised] has no from_bytes"));
  CHECK_THROWS_WITH(load_params(write_params(std::string(kComplete) + "[raised]\nfrom_bytes = 1\nOss_ns_per_byte = -1\n")),
                    Catch::Contains("[raised] Oss_ns_per_byte"));
  CHECK_THROWS_WITH(load_params(write_params(std::string(kComplete) + "[raised]\nfrom_bytes = 1\nQ = 1\n")),
                    Catch::Contains("[raised] Q: unknown key"));
  CHECK_THROWS_WITH(load_params(write_params(std::string(kComplete) + "[raised]\nfrom_bytes = 8191\nto_bytes = 100\n")),
                    Catch::Contains("[raised] to_bytes = 100 is not above from_bytes = 8191"));
  CHECK_FALSE(p.raised_to);
}

TEST_CASE("[raised] to_bytes: a raise of S goes no further than the library reaches", "[loggps]") {
  // MPICH over UCX's shared memory as calibrate measured it: S 8255 at the default, and with the limit
  // raised above every size a 387755-byte send still waited
  LogGPSParams p = load_params(write_params(std::string(kComplete) +
                                            "[raised]\nfrom_bytes = 8255\nto_bytes = 387754\nOss_ns_per_byte = 0.08\n"
                                            "Ors_ns_per_byte = 0.05\n"));
  REQUIRE(p.raised_to == 387754u);
  p.S = p.s = 8255;
  LogGPSParams up = p;
  up.move_S(262144);  // within reach: as asked
  CHECK(up.S == 262144u);
  CHECK(up.s == 262144u);
  up = p;
  up.move_S(1048576);  // beyond: the most the library reaches
  CHECK(up.S == 387754u);
  CHECK(up.s == 387754u);
  CHECK(LogGPS(up).send_waits_for_receive(524288, false));  // a 512 KiB message still waits, as it did
  CHECK_FALSE(LogGPS(up).send_waits_for_receive(387754, false));
  // and is moved as it was: its transfer is the rendezvous sweep's (s as the set had it, 8255 bytes at Gs
  // and the rest at Gl), where s following S would price 387754 of its bytes at Gs
  REQUIRE(p.Gs != p.Gl);
  CHECK(up.s_set == 8255u);
  CHECK(LogGPS(up).transfer(524288) == Approx(LogGPS(p).transfer(524288)));
  CHECK(LogGPS(up).transfer(524288) == Approx(p.L + 8255 * p.Gs + (524288 - 8255) * p.Gl));
  // a message the raise makes eager goes at s = S, as the [raised] sweep was fitted
  CHECK(LogGPS(up).transfer(262144) == Approx(p.L + 262144 * p.Gs));
  // an s given (--set s=...) prices every message
  LogGPSParams given = up;
  given.set("s", 100000, "--set");
  CHECK_FALSE(given.s_set);
  CHECK(LogGPS(given).transfer(524288) == Approx(p.L + 100000 * p.Gs + (524288 - 100000) * p.Gl));
  // lowering S is no raise: as asked
  up = p;
  up.move_S(4096);
  CHECK(up.S == 4096u);
  CHECK_FALSE(up.s_set);  // s went down with S, as before
  CHECK(up.s == 4096u);
  // a set whose own S is already above it (a run configured otherwise) is not lowered by a raise
  up = p;
  up.S = up.s = 600000;
  up.move_S(1048576);
  CHECK(up.S == 600000u);
  // without to_bytes: any S
  LogGPSParams free = p;
  free.raised_to.reset();
  free.move_S(1048576);
  CHECK(free.S == 1048576u);
}

TEST_CASE("[large]: a message above from_bytes goes by the second rendezvous protocol's own terms", "[loggps]") {
  std::string text = std::string(kComplete) +
                     "[large]\nfrom_bytes = 32768\nR_ns = 3000\nOsl_ns_per_byte = 1.0\nOrl_ns_per_byte = 0.5\n";
  LogGPSParams p = load_params(write_params(text));
  REQUIRE(p.large_from == 32768u);
  LogGPS m(p);
  // up to from_bytes the set's Osl, Orl and handshake (o' 6730, L 850, Osl 4.80, Orl 3.86)
  CHECK(m.T1p(32768) == Approx(6730 + 32768 * 4.80));
  CHECK(m.T3p(32768) == Approx(6730 + 32768 * 3.86));
  CHECK(m.T5(32768) == Approx(2 * 6730 + 850));
  // above it the [large] terms, and R_ns more in the ACK's way back
  CHECK(m.T1p(32769) == Approx(6730 + 32769 * 1.0));
  CHECK(m.T3p(32769) == Approx(6730 + 32769 * 0.5));
  CHECK(m.T5(32769) == Approx(2 * 6730 + 850 + 3000));
  // (5) to a receiver already waiting: T4(0) + T5 + T1' = (o' + L + o') + (2 o' + L + R) + o' + k Osl
  CHECK(m.send(32769, 0, 0) == Approx(5 * 6730 + 2 * 850 + 3000 + 32769 * 1.0));
  // the transfer (Gs, Gl) and every eager size are the set's own, and the handshake a what-if on L shows
  CHECK(m.T2p(32769) == Approx(8191 * 15.17 + (32769 - 8191) * 0.04 + 850));
  CHECK(m.T1(16383) == Approx(6730 + 16383 * 5.02));
  CHECK(m.handshake() == Approx(4 * 6730 + 2 * 850));
  // bad tables are refused with the key
  CHECK_THROWS_WITH(load_params(write_params(std::string(kComplete) + "[large]\nR_ns = 1\n")),
                    Catch::Contains("[large] has no from_bytes"));
  CHECK_THROWS_WITH(load_params(write_params(std::string(kComplete) + "[large]\nfrom_bytes = 1\nR_ns = -1\n")),
                    Catch::Contains("[large] R_ns: not a time"));
  CHECK_THROWS_WITH(load_params(write_params(std::string(kComplete) + "[large]\nfrom_bytes = 1\nOss_ns_per_byte = 1\n")),
                    Catch::Contains("[large] Oss_ns_per_byte: unknown key"));
}

TEST_CASE("receive contention divides the bandwidth of the largest per-byte term by the senders", "[loggps]") {
  LogGPS m(fig2_params());  // of (Oss, Ors, Gs) = (1, 2, 4), Gs holds the bandwidth
  CHECK(m.T2(2, 2) == Approx(2 * 8 + 10));
  CHECK(m.T1(2, 2) == Approx(m.T1(2, 1)));
  CHECK(m.T3(2, 2) == Approx(m.T3(2, 1)));
  LogGPSParams p = fig2_params();
  p.Ors = 9;  // now the receive overhead is the bottleneck
  LogGPS n(p);
  CHECK(n.T3(2, 3) == Approx(100 + 2 * 27));
  CHECK(n.T2(2, 3) == Approx(n.T2(2, 1)));
}

TEST_CASE("bad parameter files and values are refused with the file, the key and the reason", "[loggps][errors]") {
  CHECK_NOTHROW(load_params(write_params(kComplete)));
  std::string unknown = std::string(kComplete) + "Q_ns = 3\n";
  CHECK_THROWS_WITH(load_params(write_params(unknown)), Catch::Contains("Q_ns: unknown key") && Catch::Contains("p.toml"));
  std::string negative = kComplete;
  negative.replace(negative.find("L_ns = 850"), 10, "L_ns = -850");
  CHECK_THROWS_WITH(load_params(write_params(negative)), Catch::Contains("L_ns") && Catch::Contains("negative"));
  std::string inverted = kComplete;
  inverted.replace(inverted.find("s_bytes = 8191"), 14, "s_bytes = 99999");
  CHECK_THROWS_WITH(load_params(write_params(inverted)), Catch::Contains("s = 99999 is larger than S = 16383"));
  std::string missing = kComplete;
  missing.erase(missing.find("Gl_ns_per_byte"), std::string("Gl_ns_per_byte = 0.04\n").size());
  CHECK_THROWS_WITH(load_params(write_params(missing)), Catch::Contains("Gl_ns_per_byte is missing"));
  CHECK_THROWS_WITH(load_params(write_params("[loggps\nL_ns = 1")), Catch::Contains("p.toml:"));
  // R (mpiadvise's rendezvous term) is optional: 0 when absent, read when given, never negative
  CHECK(load_params(write_params(kComplete)).R == 0);
  std::string with_r = std::string(kComplete) + "R_ns = 27500\n";
  CHECK(load_params(write_params(with_r)).R == 27500);
  std::string negative_r = std::string(kComplete) + "R_ns = -1\n";
  CHECK_THROWS_WITH(load_params(write_params(negative_r)), Catch::Contains("R_ns") && Catch::Contains("R = -1"));
  LogGPSParams p = load_params(write_params(kComplete));
  CHECK_THROWS_WITH(p.set("X", 1, "--set"), Catch::Contains("unknown parameter 'X'"));
  CHECK_THROWS_WITH(p.set("L", -1, "--set"), Catch::Contains("L = -1 must be a non-negative finite number"));
  // values no machine has, which made the replay's sums overflow and its casts undefined
  CHECK_THROWS_WITH(p.set("L", 1e308, "--set"), Catch::Contains("L = 1e+308 is larger than L allows"));
  CHECK_THROWS_WITH(p.set("o", std::nan(""), "--set"), Catch::Contains("must be a non-negative finite number"));
  CHECK_THROWS_WITH(p.set("Orl", 1e7, "--set"), Catch::Contains("larger than Orl allows"));
  CHECK_THROWS_WITH(p.set("S", 1e19, "--set"), Catch::Contains("larger than 2^62 bytes"));
  CHECK_THROWS_WITH(p.set("S", 1.5, "--set"), Catch::Contains("whole number of bytes"));
  p.set("S", std::numeric_limits<double>::infinity(), "--set");
  CHECK(p.S == LogGPSParams::kInfinite);
  std::string huge = kComplete;
  huge.replace(huge.find("L_ns = 850"), 10, "L_ns = 1e300");
  CHECK_THROWS_WITH(load_params(write_params(huge)), Catch::Contains("L_ns") && Catch::Contains("larger than L allows"));
  std::string saving = std::string(kComplete) + "[mpi]\npersistent_saving_ns = 1e200\n";
  CHECK_THROWS_WITH(load_params(write_params(saving)), Catch::Contains("persistent_saving_ns"));
  std::string posts = std::string(kComplete) + "[mpi]\nisend_ns = 5160\nirecv_ns = 40\n";
  LogGPSParams measured = load_params(write_params(posts));
  CHECK(LogGPS(measured).isend() == 5160);
  CHECK(LogGPS(measured).irecv() == 40);
  CHECK(LogGPS(load_params(write_params(kComplete))).irecv() == 6730);  // o', as (10) says
  CHECK_THROWS_WITH(load_params(write_params(std::string(kComplete) + "[mpi]\nirecv_ns = -1\n")),
                    Catch::Contains("irecv_ns = -1"));
  CHECK_THROWS_WITH(find_params("no-such-set", params_dir()), Catch::Contains("myrinet-mpich-score"));
}

TEST_CASE("a split message goes in step with a late receiver once its chunks fill the eager buffer", "[loggps][split]") {
  LogGPSParams p;
  p.L = 1000, p.o = 500, p.Oss = p.Ors = 0.1, p.Gs = p.Gl = 0.2;
  p.s = p.S = 1000;
  // 10 chunks of 1000 bytes: T1 = T3 = 600, transfer 1200. The receiver posts at tr = 100000.
  LogGPS unlimited(p);
  CHECK(unlimited.chunks(10000, 1000) == 10);
  CHECK_FALSE(unlimited.split_waits_for_receive(10000, 1000));
  SideCost s = unlimited.split_send_side(10000, 1000, 0, 100000, 1);
  CHECK(s.done == Approx(10 * 600));  // streams every chunk into the buffer
  CHECK(s.wait == Approx(0));
  SideCost r = unlimited.split_recv_side(10000, 1000, 0, 100000, 1);
  CHECK(r.done == Approx(100000 + 10 * 600));  // every chunk is there: ten receive overheads
  p.eager_buffer_bytes = 3000;  // three chunks
  LogGPS limited(p);
  CHECK(limited.chunks_buffered(1000) == 3);
  CHECK(limited.split_waits_for_receive(10000, 1000));
  s = limited.split_send_side(10000, 1000, 0, 100000, 1);
  // chunk 3 waits until the receiver took chunk 0 (at 100000, done 100600); then one chunk per cycle
  // max(T1, T3, (T1 + T3 + transfer) / 3) = 800: the last (chunk 9) starts at 100600 + 6 x 800
  CHECK(s.done == Approx(100600 + 6 * 800 + 600));
  CHECK(s.overhead == Approx(6000));
  CHECK(s.wait == Approx(s.done - 6000));
  r = limited.split_recv_side(10000, 1000, 0, 100000, 1);
  // the last chunk arrives at 105400 + 600 + 1200 = 107200 and is received by 107800
  CHECK(r.done == Approx(107800));
}

TEST_CASE("the eager buffer is read from [eager], and bad values are refused naming the key", "[loggps][params]") {
  ParamFiles files("eager");
  auto write = [&](const std::string& name, const std::string& text) { return files.write(name, text); };
  LogGPSParams p = load_params(write("ok.toml", "[eager]\nbuffer_bytes = 4545\nheader_bytes = 47\n"));
  REQUIRE(p.eager_buffer_bytes);
  CHECK(*p.eager_buffer_bytes == 4545);
  CHECK(p.eager_header_bytes == 47);
  CHECK_FALSE(p.eager_buffer_messages);
  CHECK_FALSE(load_params(write("none.toml", "")).eager_buffer_bytes);
  CHECK_THROWS_WITH(load_params(write("neg.toml", "[eager]\nbuffer_bytes = -1\n")),
                    Catch::Contains("[eager] buffer_bytes: not a whole number"));
  CHECK_THROWS_WITH(load_params(write("frac.toml", "[eager]\nbuffer_messages = 2.5\n")),
                    Catch::Contains("[eager] buffer_messages"));
  CHECK_THROWS_WITH(load_params(write("key.toml", "[eager]\nbufer_bytes = 1\n")),
                    Catch::Contains("[eager] bufer_bytes: unknown key"));
}

TEST_CASE("o_r and D: a receive's own overhead, and what a late eager receive costs more", "[loggps]") {
  // fig2_params with a receive cheaper than its send and a late receive dearer than an early one
  LogGPSParams p = fig2_params();
  const LogGPS paper(p);
  p.o_r = 30, p.D = 500;
  const LogGPS m(p);
  CHECK(m.T1(3) == paper.T1(3));                 // the send's overhead is o'
  CHECK(m.T3(3) == Approx(30 + 3 * 2));          // the receive's o_r + k Ors
  CHECK(m.T3p(10) == Approx(30 + 10 * 16));
  // an eager 3-byte message sent at 0 arrives at T1 + T2' = 103 + 2 * 4 + 32 + 10 = 153
  const double arrival = m.eager_arrival(3, 0);
  REQUIRE(arrival == Approx(153));
  // a receive called before it waits, and pays o_r + k Ors; one called after pays D more
  SideCost early = m.recv_side(3, 0, 100, 1, false);
  CHECK(early.done == Approx(153 + 36));
  CHECK(early.wait == Approx(53));
  SideCost late = m.recv_side(3, 0, 1000, 1, false);
  CHECK(late.done == Approx(1000 + 36 + 500));
  CHECK(late.overhead == Approx(536));
  CHECK(late.wait == 0);
  CHECK(m.recv(3, 0, 1000) == Approx(536));     // Table 4's (8) the same
  CHECK(m.recv(3, 0, 100) == Approx(53 + 36));
  // (13): with w = 0 both receives wait, 2(T1 + T2' + T3); with w long the computing side's is late
  CHECK(m.round_trip(3, 0) == Approx(2 * (103 + 50 + 36)));
  CHECK(m.round_trip(3, 1e5) == Approx(1e5 + 103 + 36 + 500));
  // a rendezvous message's receive is not an eager one: no D
  CHECK(m.recv_side(10, 0, 1e5, 1, false).done == Approx(LogGPS([&] { LogGPSParams q = p; q.D = 0; return q; }()).recv_side(10, 0, 1e5, 1, false).done));
  // o_r defaults to o' and D to 0 in files; both read, set and scaled
  ParamFiles files("o_r");
  const LogGPSParams none = load_params(files.write("none.toml", ""));
  CHECK_FALSE(none.o_r);
  CHECK(none.o_recv() == 1);
  CHECK(none.D == 0);
  const LogGPSParams both = load_params(files.write("both.toml", "o_r_ns = 0.5\nD_ns = 3100\n"));
  CHECK(both.o_recv() == 0.5);
  CHECK(both.D == 3100);
  CHECK_THROWS_WITH(load_params(files.write("neg.toml", "D_ns = -1\n")), Catch::Contains("D_ns") && Catch::Contains("D = -1"));
  LogGPSParams s = both;
  s.set("o_r", 700, "--set");
  s.set("D", 0, "--set");
  CHECK(s.o_recv() == 700);
  CHECK(s.D == 0);
  const LogGPSParams twice = both.scaled(2);
  CHECK(twice.o_recv() == 1);
  CHECK(twice.D == 6200);
  // the ideal network (efficiency.hpp) has neither: a late eager receive is free there too
  const LogGPS ideal(ideal_network(p));
  CHECK(ideal.recv_side(3, 0, 1000, 1, false).done == 1000);
}

TEST_CASE("a set at another of the machine's speeds: every time it prices scaled, nothing else", "[loggps][params]") {
  LogGPSParams p;
  p.L = 100, p.o = 10, p.Oss = 0.1, p.Ors = 0.2, p.Osl = 0.3, p.Orl = 0.4, p.Gs = 0.5, p.Gl = 0.6, p.R = 700;
  p.s = 256, p.S = 4096;
  p.isend_ns = 80, p.persistent_saving = 6, p.reduce_ns_per_byte = 0.03;
  p.raised_from = 4096, p.Oss_raised = 0.05, p.Ors_raised = 0.04;
  p.large_from = 8192, p.R_large = 3000, p.Osl_large = 0.12, p.Orl_large = 0.02;
  p.eager_buffer_bytes = 4545;
  const LogGPSParams q = p.scaled(2);
  const LogGPS a(p), b(q);
  // every message's time doubles, eager, rendezvous, raised and large alike
  for (uint64_t k : {0, 100, 4000, 6000, 20000})
    CHECK(b.communication(k, 0, 0) == Approx(2 * a.communication(k, 0, 0)));
  CHECK(b.round_trip(20000, 5e5) - 5e5 == Approx(2 * (a.round_trip(20000, 5e5) - 5e5)));
  CHECK(*q.isend_ns == 160);
  CHECK_FALSE(q.irecv_ns);
  CHECK(*q.persistent_saving == 12);
  CHECK(*q.reduce_ns_per_byte == 0.03);
  CHECK(q.s == 256);
  CHECK(q.S == 4096);
  CHECK(*q.large_from == 8192);
  CHECK(*q.eager_buffer_bytes == 4545);
}

TEST_CASE("a machine's two speeds are read from [machine], and bad values are refused naming the key", "[loggps][params]") {
  ParamFiles files("machine");
  auto write = [&](const std::string& name, const std::string& text) { return files.write(name, text); };
  LogGPSParams p = load_params(write("ok.toml", "[machine]\nspeeds_ratio = 2.25\nslow_share = 0.4\n"));
  REQUIRE(p.speeds_ratio);
  CHECK(*p.speeds_ratio == 2.25);
  CHECK(p.slow_share == 0.4);
  CHECK(p.speeds.empty());
  CHECK(load_params(write("set.toml", "[machine]\nspeeds_ratio = 2.25\nspeeds = [0.444, 1.0]\n")).speeds ==
        std::vector<double>{0.444, 1.0});
  CHECK_THROWS_WITH(load_params(write("zero.toml", "[machine]\nspeeds_ratio = 2\nspeeds = [0, 1]\n")),
                    Catch::Contains("[machine] speeds: each factor on the set's times is a number from 0.01 to 100"));
  CHECK_THROWS_WITH(load_params(write("list.toml", "[machine]\nspeeds_ratio = 2\nspeeds = 0.5\n")),
                    Catch::Contains("[machine] speeds: not a list of factors"));
  CHECK_FALSE(load_params(write("none.toml", "")).speeds_ratio);
  CHECK_THROWS_WITH(load_params(write("low.toml", "[machine]\nspeeds_ratio = 0.5\n")),
                    Catch::Contains("low.toml: [machine] speeds_ratio: not a number from 1 to 100"));
  CHECK_THROWS_WITH(load_params(write("share.toml", "[machine]\nspeeds_ratio = 2\nslow_share = 1.5\n")),
                    Catch::Contains("[machine] slow_share: not a share from 0 to 1"));
  CHECK_THROWS_WITH(load_params(write("missing.toml", "[machine]\nslow_share = 0.5\n")),
                    Catch::Contains("[machine] speeds_ratio is missing"));
  CHECK_THROWS_WITH(load_params(write("key.toml", "[machine]\nspeed_ratio = 2\n")),
                    Catch::Contains("[machine] speed_ratio: unknown key"));
}

TEST_CASE("[resend]: data sent again costs its path's factor on what data just written costs", "[loggps][params]") {
  const std::string text = std::string(kComplete) +
                           "[large]\nfrom_bytes = 32768\nR_ns = 3000\nOsl_ns_per_byte = 1.0\nOrl_ns_per_byte = 0.5\n"
                           "[resend]\nbuffered_factor = 0.9\nrendezvous_factor = 0.4\n";
  const LogGPSParams p = load_params(write_params(text));
  REQUIRE(p.resend_buffered);
  REQUIRE(p.resend_rendezvous);
  CHECK(*p.resend_buffered == 0.9);
  CHECK(*p.resend_rendezvous == 0.4);
  // the paths: eager (S 16383), and up to [large]'s from_bytes, are the library's buffers; above, its rendezvous
  CHECK(p.buffered(16383));
  CHECK(p.buffered(32768));
  CHECK_FALSE(p.buffered(32769));
  LogGPSParams no_large = p;
  no_large.large_from.reset();
  CHECK_FALSE(no_large.buffered(16384));
  // buffered: the per-byte terms times f, the times as they were (o' 6730, L 850)
  const LogGPS fresh(p), buffered(p.resent(0.9, false)), rendezvous(p.resent(0.4, true));
  CHECK(buffered.T1(16383) == Approx(6730 + 16383 * 5.02 * 0.9));
  CHECK(buffered.T2(8191) == Approx(850 + 8191 * 15.17 * 0.9));
  CHECK(buffered.T3(16383) == Approx(6730 + 16383 * 4.72 * 0.9));
  CHECK(buffered.T5(32769) == Approx(fresh.T5(32769)));
  // rendezvous: the [large] per-byte terms and R_large too
  CHECK(rendezvous.T1p(32769) == Approx(6730 + 32769 * 1.0 * 0.4));
  CHECK(rendezvous.T3p(32769) == Approx(6730 + 32769 * 0.5 * 0.4));
  CHECK(rendezvous.T5(32769) == Approx(2 * 6730 + 850 + 3000 * 0.4));
  CHECK_FALSE(p.resent(0.4, true).resend_rendezvous);  // applied once
  // R, the rendezvous protocol's own cost, on the rendezvous path only (T5 = 2 o' + L + R below large_from)
  LogGPSParams with_R = p;
  with_R.R = 1000;
  CHECK(LogGPS(with_R.resent(0.4, true)).T5(20000) == Approx(2 * 6730 + 850 + 400));
  CHECK(LogGPS(with_R.resent(0.9, false)).T5(20000) == Approx(2 * 6730 + 850 + 1000));
  // a set at another speed keeps its factors (they are ratios)
  CHECK(*p.scaled(2).resend_rendezvous == 0.4);
  // bad tables are refused with the key
  CHECK_THROWS_WITH(load_params(write_params(std::string(kComplete) + "[resend]\nbuffered_factor = -0.1\n")),
                    Catch::Contains("[resend] buffered_factor = -0.1: not a number from 0 to 10"));
  CHECK_THROWS_WITH(load_params(write_params(std::string(kComplete) + "[resend]\nrendezvous_factor = \"fast\"\n")),
                    Catch::Contains("[resend] rendezvous_factor: not a number"));
  CHECK_THROWS_WITH(load_params(write_params(std::string(kComplete) + "[resend]\nper_byte_factor = 1\n")),
                    Catch::Contains("[resend] per_byte_factor: unknown key"));
  // none: data sent again is priced as data just written
  CHECK_FALSE(load_params(write_params(kComplete)).resend_buffered);
  CHECK_FALSE(p.resend_cached_bytes);
  CHECK_THROWS_WITH(load_params(write_params(std::string(kComplete) + "[resend]\ncached_bytes = 100\n")),
                    Catch::Contains("[resend] cached_bytes: not a whole number of bytes from 1024"));
}

TEST_CASE("[resend] cached_bytes: the bytes of a larger message beyond the caches' hold cost as data just written",
          "[loggps][params]") {
  const std::string text = std::string(kComplete) +
                           "[large]\nfrom_bytes = 32768\nR_ns = 3000\nOsl_ns_per_byte = 1.0\nOrl_ns_per_byte = 0.5\n"
                           "[resend]\nbuffered_factor = 0.9\nrendezvous_factor = 0.4\ncached_bytes = 262144\n";
  const LogGPSParams p = load_params(write_params(text));
  REQUIRE(p.resend_cached_bytes);
  CHECK(*p.resend_cached_bytes == 262144);
  const LogGPS fresh(p);
  const ResentModels resent(p);
  // up to the hold: the path's factor (o' 6730 ns, Osl 1.0 ns/B above large_from)
  CHECK(resent.of(fresh, 262144, true).T1p(262144) == Approx(6730 + 262144 * 0.4));
  // 1 MiB: 262144 bytes at 0.4 and 786432 at 1, a factor of 0.85 on its per-byte terms and R_large (kept
  // in steps of 1/4096: 3482/4096)
  const double f = (262144 * 0.4 + 786432) / 1048576.0;
  CHECK(f == Approx(0.85));
  const double kept = 3482 / 4096.0;
  const LogGPS& big = resent.of(fresh, 1048576, true);
  CHECK(big.T1p(1048576) == Approx(6730 + 1048576 * 1.0 * kept));
  CHECK(big.T5(1048576) == Approx(2 * 6730 + 850 + 3000 * kept));
  CHECK(std::fabs(kept - f) <= 0.5 / 4096);
  CHECK(&resent.of(fresh, 1048576, true) == &big);  // made once a factor
  CHECK(&resent.of(fresh, 1048577, true) == &big);  // a size of the same factor shares it
  // not sent again: the set's own model, whatever the size
  CHECK(&resent.of(fresh, 1048576, false) == &fresh);
  // a set resent applies its factor once and drops the hold with it
  CHECK_FALSE(p.resent(0.4, true).resend_cached_bytes);
}
