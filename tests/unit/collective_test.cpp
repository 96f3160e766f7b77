// Collectives by message size (cost::collective_cost): NCCL's algorithms
// (ring, tree, NVLS, NVLSTree) and protocols (LL, LL128, Simple) over the
// profile's links, the hierarchy of a group that spans nodes, the SMs a
// collective holds, and the fabric fields of a profile with their
// diagnostics. Expected values are hand calculations from the model's
// stated constants (NCCL src/graph/tuning.cc: per-step latency shares
// LL 0.6/3.4, LL128 1.9/3.4 of Simple's over NVLink and 2.7/14, 4.0/14 over
// the network; base latencies 6.6 / 14 / 8.4 us; bandwidth shares 0.25 /
// 0.92 / 1; NVLS 25 us; tree 0.92) and the profiles' figures (H100 SXM:
// 450 GB/s NVLink, 3 us a step, one 400 Gb/s NIC per GPU, 10 us a step, 132
// SMs; A100 SXM: 300 GB/s, 108 SMs), checked against published nccl-tests
// figures where one exists:
//   - nccl-tests#212 (S. Jeaugey): 8 x H100 all-reduce with NVLS reaches a
//     peak busbw of ~480 GB/s; the ring ~370 GB/s (450 GB/s less ~20%);
//   - NCCL's tuning caps A100's NVLink busbw at 235 GB/s; nccl-tests on DGX
//     A100 reach ~230;
//   - one 400 Gb/s NDR NIC per GPU gives ~45-48 GB/s of inter-node busbw.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "ridgeline/cost/cost.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/hardware_yaml.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "test_support.hpp"

using namespace ridgeline;
using test::shipped_text;
using test::edited;
using graph::Collective;
namespace fs = std::filesystem;

namespace {

constexpr double kKiB = 1024.0, kMiB = 1024.0 * kKiB, kGiB = 1024.0 * kMiB;

const cost::CostParams& h100() {
  static const cost::CostParams c = cost::resolve(test::gpu("h100_sxm"));
  return c;
}
const cost::CostParams& a100() {
  static const cost::CostParams c = cost::resolve(test::gpu("a100_sxm_80gb"));
  return c;
}


/// Writes `text` as a profile and returns every diagnostic its loading gives,
/// with the file's path replaced by "x.yaml".
std::vector<std::string> load_errors(const std::string& text) {
  const fs::path f = fs::temp_directory_path() / ("ridgeline_collective_" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream out(f);
    out << text;
  }
  std::vector<std::string> got;
  try {
    spec::load_hardware(f.string());
  } catch (const support::SpecError& e) {
    for (const auto& d : e.diagnostics()) {
      std::string s = d.format();
      if (s.rfind(f.string(), 0) == 0) s = "x.yaml" + s.substr(f.string().size());
      got.push_back(s);
    }
  }
  fs::remove(f);
  return got;
}

}  // namespace

TEST_CASE("collective: ring volumes are DESIGN.md's reference formulas") {
  // DESIGN.md "Ring collectives": all-reduce 2 (n-1)/n S, all-gather and
  // reduce-scatter (n-1)/n S per GPU.
  const double S = 1 * kGiB;
  CHECK(cost::collective_bytes_per_gpu(Collective::kAllReduce, S, 8) == doctest::Approx(1.75 * S));
  CHECK(cost::collective_bytes_per_gpu(Collective::kAllReduce, S, 2) == doctest::Approx(1.0 * S));
  CHECK(cost::collective_bytes_per_gpu(Collective::kAllGather, S, 8) == doctest::Approx(0.875 * S));
  CHECK(cost::collective_bytes_per_gpu(Collective::kReduceScatter, S, 16) == doctest::Approx(15.0 / 16 * S));
  // Without NVLS (A100) a large all-reduce is the ring at Simple's rate:
  // 8.4 us + 14 x 3 us + 1.75 GiB / (300 GB/s x 0.8) = 7.8798 ms.
  const cost::CollectiveCost r = cost::collective_cost(Collective::kAllReduce, S, 8, 8, a100());
  CHECK(r.algorithm == cost::CommAlgorithm::kRing);
  CHECK(r.protocol == cost::CommProtocol::kSimple);
  CHECK(r.time_s == doctest::Approx(8.4e-6 + 42e-6 + 1.75 * S / 240e9).epsilon(1e-9));
}

TEST_CASE("collective: achieved bus bandwidth rises with message size to the link's sustained rate") {
  const auto& c = h100();
  // 8 KiB, latency-bound: LL, 6.6 us + 14 steps x 3 us x 0.6/3.4 + 14 KiB / (360 GB/s x 0.25) = 14.17 us.
  const double small = 8 * kKiB;
  const cost::CollectiveCost s = cost::collective_cost(Collective::kAllReduce, small, 8, 8, c);
  CHECK(s.protocol == cost::CommProtocol::kLL);
  CHECK(s.time_s == doctest::Approx(6.6e-6 + 14 * 3e-6 * 0.6 / 3.4 + 1.75 * small / 90e9).epsilon(1e-9));
  CHECK(cost::collective_bus_bytes_per_s(Collective::kAllReduce, small, 8, 8, c) < 2e9);
  // 1 GiB, bandwidth-bound: NVLS, 25 us + 9/8 GiB / (450 GB/s x 0.8 x 0.85) = 3.9726 ms, a busbw of
  // 1.75 GiB / 3.9726 ms = 473 GB/s (nccl-tests#212: ~480 GB/s).
  const double big = 1 * kGiB;
  const cost::CollectiveCost b = cost::collective_cost(Collective::kAllReduce, big, 8, 8, c);
  CHECK(b.algorithm == cost::CommAlgorithm::kNvls);
  CHECK(b.time_s == doctest::Approx(25e-6 + 9.0 / 8 * big / 306e9).epsilon(1e-9));
  const double busbw = cost::collective_bus_bytes_per_s(Collective::kAllReduce, big, 8, 8, c);
  CHECK(busbw == doctest::Approx(473.0e9).epsilon(0.002));
  CHECK(busbw > 450e9);
  CHECK(busbw < 490e9);
  // The ring's sustained rate on A100: 1.75 GiB / 7.8798 ms = 238.5 GB/s (NCCL caps it at 235).
  CHECK(cost::collective_bus_bytes_per_s(Collective::kAllReduce, big, 8, 8, a100()) ==
        doctest::Approx(238.5e9).epsilon(0.002));
  // Monotone, every collective, 1 KiB to 4 GiB: the fastest of candidates
  // t = L + k S each gives a busbw S' / t rising in S.
  for (Collective kind : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                          Collective::kAllToAll}) {
    for (double span : {8.0, 16.0, 64.0}) {
      double prev = 0;
      for (double S = kKiB; S <= 4 * kGiB; S *= 2) {
        const double bw = cost::collective_bus_bytes_per_s(kind, S, 8, span, c);
        CHECK(bw >= prev * (1 - 1e-12));
        prev = bw;
      }
    }
  }
}

TEST_CASE("collective: crossing nodes is slower than staying inside one, at the NIC's rate") {
  const auto& c = h100();
  for (double S : {64 * kKiB, 16 * kMiB, 1 * kGiB}) {
    const double one_node = cost::collective_time(Collective::kAllReduce, S, 8, 8, c);
    // Eight ranks, one per node (stride 8: a DP group under TP = 8).
    CHECK(cost::collective_time(Collective::kAllReduce, S, 8, 64, c) > one_node);
    CHECK(cost::collective_time(Collective::kAllGather, S, 8, 64, c) > cost::collective_time(Collective::kAllGather, S, 8, 8, c));
  }
  // Two nodes of 8 (n = 16, span 16), 1 GiB: the ring, bound by the NICs:
  // 1/8 of 2 x 15/16 GiB through each GPU's 400 Gb/s NIC at 0.95 = 5.2981
  // ms (its NVLink share, 7/8 of it at 360 GB/s, is 4.8934 ms), plus
  // 8.4 us + 28 x 3 us + 2 x 10 us. Tree (70.4 us + 2 GiB / 8 / (47.5 GB/s x
  // 0.92) = 6.213 ms) and NVLSTree (45 us + 6.1427 ms) lose.
  const double S = 1 * kGiB;
  const cost::CollectiveCost two = cost::collective_cost(Collective::kAllReduce, S, 16, 16, c);
  CHECK(two.algorithm == cost::CommAlgorithm::kRing);
  CHECK(two.time_s == doctest::Approx(8.4e-6 + 28 * 3e-6 + 2 * 10e-6 + 2.0 * 15 / 16 * S / 8 / 47.5e9).epsilon(1e-9));
  // A group of 2 GPUs in different nodes (DP = 2 under TP = 8): all of S
  // through one NIC: busbw S / (28.4 us + S / 47.5 GB/s) = 47.4 GB/s, the
  // ~45-48 GB/s nccl-tests show over one 400 Gb/s NDR NIC.
  const double dp = cost::collective_bus_bytes_per_s(Collective::kAllReduce, S, 2, 16, c);
  CHECK(dp == doctest::Approx(S / (8.4e-6 + 2 * 10e-6 + S / 47.5e9)).epsilon(1e-9));
  CHECK(dp > 45e9);
  CHECK(dp < 48e9);
  // Pipeline p2p to the next node: 8.4 us + 10 us + S / 47.5 GB/s (Simple).
  CHECK(cost::collective_time(Collective::kP2p, 64 * kMiB, 2, 16, c) ==
        doctest::Approx(8.4e-6 + 10e-6 + 64 * kMiB / 47.5e9).epsilon(1e-9));
  // Many nodes, small message: the tree's 2 log2 N network steps beat the
  // ring's 2 (N - 1): 64 ranks, one per node, 64 KiB: tree LL, 6.6 us + 12
  // steps x 10 us x 2.7/14 + 2 x 64 KiB / (47.5 GB/s x 0.92 x 0.25).
  const cost::CollectiveCost tree = cost::collective_cost(Collective::kAllReduce, 64 * kKiB, 64, 512, c);
  CHECK(tree.algorithm == cost::CommAlgorithm::kTree);
  CHECK(tree.protocol == cost::CommProtocol::kLL);
  CHECK(tree.time_s ==
        doctest::Approx(6.6e-6 + 12 * 10e-6 * 2.7 / 14 + 2 * 64 * kKiB / (47.5e9 * 0.92 * 0.25)).epsilon(1e-9));
}

TEST_CASE("collective: NVLS beats the ring where the profile has it") {
  const auto& c = h100();
  CHECK(c.nvls_frac == doctest::Approx(0.85));  // NCCL nvlsEfficiency, Hopper
  CHECK(a100().nvls_frac == 0);                  // no NVLS before third-generation NVSwitch
  cost::CostParams ring = c;
  ring.nvls_frac = 0;
  for (double S : {16 * kMiB, 256 * kMiB, 1 * kGiB}) {
    const cost::CollectiveCost nv = cost::collective_cost(Collective::kAllReduce, S, 8, 8, c);
    CHECK(nv.algorithm == cost::CommAlgorithm::kNvls);
    CHECK(nv.time_s < cost::collective_time(Collective::kAllReduce, S, 8, 8, ring));
  }
  // 1 GiB: NVLS 3.9726 ms against the ring's 50.4 us + 1.75 GiB / 360 GB/s = 5.2700 ms.
  CHECK(cost::collective_time(Collective::kAllReduce, kGiB, 8, 8, ring) ==
        doctest::Approx(50.4e-6 + 1.75 * kGiB / 360e9).epsilon(1e-9));
  // Two GPUs: NVLS moves 3/2 S for the ring's S; the ring stays.
  CHECK(cost::collective_cost(Collective::kAllReduce, kGiB, 2, 2, c).algorithm == cost::CommAlgorithm::kRing);
  // Small messages stay on the ring's LL protocol (NVLS's 25 us is the floor).
  CHECK(cost::collective_cost(Collective::kAllReduce, 64 * kKiB, 8, 8, c).algorithm == cost::CommAlgorithm::kRing);
  // Across nodes, NVLSTree: with a network 100 x faster (5 TB/s a GPU) the
  // NVLink phases decide, and NVLS's 9/8 S at 306 GB/s beats the ring's
  // 2 x 15/16 x 7/8 S at 360 GB/s.
  cost::CostParams slow_net = c;
  slow_net.inter_bytes_per_s = 5000e9;
  CHECK(cost::collective_cost(Collective::kAllReduce, kGiB, 16, 16, slow_net).algorithm ==
        cost::CommAlgorithm::kNvlsTree);
}

TEST_CASE("collective: sm_fraction is the kernel's channels over the SMs") {
  // H100: 2 channels per NVLink, 18 links, at most 32 (NCCL MAXCHANNELS): 32 of 132 SMs.
  CHECK(h100().comm_channels == 32);
  CHECK(h100().nvls_channels == 16);
  // A large all-gather runs the ring (NVLS's S per GPU loses to the ring's 7/8 S).
  const cost::CollectiveCost ag = cost::collective_cost(Collective::kAllGather, kGiB, 8, 8, h100());
  CHECK(ag.algorithm == cost::CommAlgorithm::kRing);
  CHECK(ag.sm_fraction == doctest::Approx(32.0 / 132));
  // NVLS all-reduce: 16 of 132.
  CHECK(cost::collective_cost(Collective::kAllReduce, kGiB, 8, 8, h100()).sm_fraction == doctest::Approx(16.0 / 132));
  // A100: 12 NVLinks x 2 = 24 of 108 SMs.
  CHECK(cost::collective_cost(Collective::kAllReduce, kGiB, 8, 8, a100()).sm_fraction == doctest::Approx(24.0 / 108));
  // A 64 KiB message fills 64 KiB / 32 KiB = 2 channels.
  CHECK(cost::collective_cost(Collective::kAllReduce, 64 * kKiB, 8, 8, h100()).sm_fraction ==
        doctest::Approx(2.0 / 132));
  // Across nodes, two channels per NIC in use: one GPU per node, 2 of 132.
  CHECK(cost::collective_cost(Collective::kAllReduce, kGiB, 2, 16, h100()).sm_fraction == doctest::Approx(2.0 / 132));
  // A profile's comm_channels wins: MI355X 112 (RCCL) of 256 CUs.
  const cost::CostParams mi355x = cost::resolve(test::gpu("mi355x"));
  CHECK(cost::collective_cost(Collective::kAllGather, kGiB, 8, 8, mi355x).sm_fraction == doctest::Approx(112.0 / 256));
  // cost_kernel reports it for a collective kernel, and 0 for compute.
  graph::Kernel k;
  k.cls = spec::KernelClass::kCollective;
  k.comm = {Collective::kAllReduce, kGiB, 8, 8};
  const cost::KernelCost kc = cost::cost_kernel(k, h100(), false);
  CHECK(kc.sm_fraction == doctest::Approx(16.0 / 132));
  CHECK(kc.basis == "NCCL NVLS");
  CHECK(kc.time_s == doctest::Approx(cost::collective_time(Collective::kAllReduce, kGiB, 8, 8, h100())));
  graph::Kernel copy;
  copy.cls = spec::KernelClass::kElementwise;
  copy.read_bytes = 1e6;
  CHECK(cost::cost_kernel(copy, h100(), false).sm_fraction == 0);
}

TEST_CASE("collective: the profile's fabric fields are read, derived and written back") {
  const spec::HardwareSpec hw = test::gpu("h100_sxm");
  CHECK(hw.interconnect.nvswitch);
  CHECK(hw.interconnect.nvls);
  CHECK(hw.interconnect.nics_per_node == 8);
  CHECK(hw.interconnect.nic_bytes_per_s == doctest::Approx(50e9));  // 400 Gb/s
  CHECK(hw.interconnect.rail_optimized);
  // A profile without them keeps the plain model: no NVLS, the default channels.
  const spec::HardwareSpec pcie = test::gpu("a100_pcie_80gb");
  CHECK_FALSE(pcie.interconnect.nvls);
  CHECK(cost::resolve(pcie).nvls_frac == 0);
  CHECK(cost::resolve(pcie).comm_channels == 2);  // 25 GB/s of PCIe: 2 channels
  // inter_node_bandwidth left out: the NICs' per-GPU share, 4 x 400 Gb/s / 8 GPUs = 25 GB/s.
  const std::string text = shipped_text("h100_sxm");
  {
    const fs::path f = fs::temp_directory_path() / ("ridgeline_collective_share_" + std::to_string(::getpid()) + ".yaml");
    std::string t = edited(text, "  inter_node_bandwidth: 50 GB/s\n", "");
    t = edited(t, "nics_per_node: 8", "nics_per_node: 4");
    t = edited(t, "  rail_optimized: true\n", "");
    std::ofstream(f) << t;
    const spec::HardwareSpec shared = spec::load_hardware(f.string());
    fs::remove(f);
    CHECK(shared.interconnect.inter_node_bytes_per_s == doctest::Approx(25e9));
  }
  // to_yaml writes every stated fabric field, and reads back the same.
  const std::string y = spec::to_yaml(hw, {});
  for (const char* line : {"  nvswitch: true\n", "  nvls: true\n", "  nics_per_node: 8\n", "  nic_bandwidth: 50 GB/s\n",
                           "  rail_optimized: true\n"})
    CHECK(y.find(line) != std::string::npos);
  const fs::path f = fs::temp_directory_path() / ("ridgeline_collective_rt_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(f) << y;
  const spec::HardwareSpec back = spec::load_hardware(f.string());
  fs::remove(f);
  CHECK(back.interconnect.nvls == hw.interconnect.nvls);
  CHECK(back.interconnect.nics_per_node == hw.interconnect.nics_per_node);
  CHECK(back.interconnect.nic_bytes_per_s == hw.interconnect.nic_bytes_per_s);
  CHECK(back.interconnect.rail_optimized == hw.interconnect.rail_optimized);
  CHECK(cost::resolve(test::gpu("mi300x")).comm_channels == 64);
}

TEST_CASE("collective: fabric diagnostics (exact text)") {
  const std::string text = shipped_text("h100_sxm");
  CHECK(load_errors(edited(text, "  nvswitch: true\n", "")) ==
        std::vector<std::string>{
            "x.yaml:35:9: error: interconnect.nvls: NVLink SHARP runs in NVSwitch; set nvswitch: true or remove nvls"});
  CHECK(load_errors(edited(edited(text, "  nic_bandwidth: 400 Gb/s\n", ""), "  rail_optimized: true\n", "")) ==
        std::vector<std::string>{
            "x.yaml:37:18: error: interconnect.nics_per_node: needs interconnect.nic_bandwidth, one NIC's bandwidth"});
  CHECK(load_errors(edited(edited(text, "nics_per_node: 8", "nics_per_node: 4"), "  inter_node_bandwidth: 50 GB/s\n",
                           "  inter_node_bandwidth: 25 GB/s\n")) ==
        std::vector<std::string>{"x.yaml:39:19: error: interconnect.rail_optimized: a rail-optimized node has a NIC "
                                 "per GPU; nics_per_node is 4 for 8 GPUs"});
  CHECK(load_errors(edited(text, "nic_bandwidth: 400 Gb/s", "nic_bandwidth: 200 Gb/s")) ==
        std::vector<std::string>{"x.yaml:33:25: error: interconnect.inter_node_bandwidth: 50 GB/s per GPU, but "
                                 "nic_bandwidth x min(nics_per_node, gpus_per_node) / gpus_per_node is 25 GB/s; make "
                                 "them agree"});
}
