// `ridgeline kernel`, driven through the binary as cli_test.cpp does: the
// documented JSON keys, FLOP and byte counts against hand calculations, the
// bound where the roofline leaves no doubt, and every error as one exact line
// with exit 2 and no output file. Times are only required to be positive and
// finite: their value is the cost model's (cost_test.cpp), not this command's.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "ridgeline/graph/memory_kernels.hpp"
#include "test_support.hpp"

using namespace ridgeline;
namespace fs = std::filesystem;

namespace {

nlohmann::json kernel_json(const std::string& args) {
  const auto r = test::run_cli("kernel " + args + " --format json");
  CAPTURE(args);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out);
}

double num(const nlohmann::json& j, const char* key) { return j.at(key).get<double>(); }

/// Every key of the README's schema table, in its order.
const char* const kDocumentedKeys[] = {
    "schema", "kernel", "class", "gpu", "shape", "dtype", "impl", "pass", "kernels", "launches", "time_s",
    "interval_level", "time_lo_s", "time_hi_s", "interval_pool", "interval_rows", "interval_note", "bound",
    "compute_s", "memory_s", "sram_s", "launch_s", "flops", "model_flops", "flop_per_s", "model_flop_per_s",
    "read_bytes", "write_bytes", "hbm_bytes", "sram_bytes", "bytes_per_s", "intensity", "peak", "peak_flop_per_s",
    "hbm_bytes_per_s", "ridge_point", "detail_kernel", "tile_m", "tile_n", "schedule", "split_k", "blocks", "waves",
    "efficiency", "basis", "calibrated", "cuda_graphs", "power_limit_w"};

}  // namespace

TEST_CASE("kernel cli: --help of the command and of each kernel lists examples") {
  const auto top = test::run_cli("kernel --help");
  CHECK(top.status == 0);
  CHECK(top.out.find("Examples:") != std::string::npos);
  CHECK(top.out.find("hardware FLOPs") != std::string::npos);
  CHECK(top.out.find("model FLOPs") != std::string::npos);
  for (const char* sub : {"gemm", "attention", "elementwise", "norm", "softmax", "cast"}) {
    CAPTURE(sub);
    const auto r = test::run_cli(std::string("kernel ") + sub + " --help");
    CHECK(r.status == 0);
    CHECK(r.out.find("Examples:") != std::string::npos);
    CHECK(r.out.find(std::string("ridgeline kernel ") + sub + " --gpu") != std::string::npos);
  }
}

TEST_CASE("kernel cli: the JSON has every documented key and nothing else") {
  for (const char* args : {"gemm --m 4096 --n 4096 --k 4096",
                           "attention --batch 1 --heads 32 --kv-heads 8 --seq 4096 --head-dim 128",
                           "attention --batch 1 --heads 8 --seq 1024 --head-dim 64 --impl naive",
                           "elementwise --elements 1048576 --inputs 2", "norm --tokens 1024 --hidden 4096 --rms",
                           "softmax --rows 1024 --cols 1024", "cast --elements 1048576 --from bf16 --to fp8"}) {
    CAPTURE(args);
    const auto j = kernel_json(args);
    CHECK(j.size() == std::size(kDocumentedKeys));
    for (const char* key : kDocumentedKeys) {
      CAPTURE(key);
      CHECK(j.contains(key));
    }
    CHECK(j["schema"] == "ridgeline.kernel/1");
    CHECK(j["gpu"] == "NVIDIA H100 SXM5 80GB");  // the default --gpu h100_sxm
    CHECK(num(j, "time_s") > 0);
    for (const auto& [key, value] : j.items())
      if (value.is_number()) {
        CAPTURE(key);
        CHECK(std::isfinite(value.get<double>()));
      }
    // The sums add up and the rates are the quantities over the time.
    CHECK(num(j, "hbm_bytes") == num(j, "read_bytes") + num(j, "write_bytes"));
    CHECK(num(j, "intensity") == doctest::Approx(num(j, "flops") / num(j, "hbm_bytes")));
    CHECK(num(j, "flop_per_s") == doctest::Approx(num(j, "flops") / num(j, "time_s")));
    CHECK(num(j, "bytes_per_s") == doctest::Approx(num(j, "hbm_bytes") / num(j, "time_s")));
    CHECK(num(j, "ridge_point") == doctest::Approx(num(j, "peak_flop_per_s") / num(j, "hbm_bytes_per_s")));
  }
}

TEST_CASE("kernel cli: an 8192^3 bf16 GEMM's FLOPs and bytes by hand, compute-bound") {
  const auto j = kernel_json("gemm --gpu h100_sxm --m 8192 --n 8192 --k 8192");
  // 2 m n k = 2 * 8192^3 = 2^40.
  CHECK(num(j, "flops") == 2.0 * 8192.0 * 8192.0 * 8192.0);
  CHECK(num(j, "model_flops") == num(j, "flops"));
  // A and B read (2 * 8192^2 elements), C written (8192^2), 2 bytes each.
  CHECK(num(j, "read_bytes") == 2.0 * 8192 * 8192 * 2);
  CHECK(num(j, "write_bytes") == 8192.0 * 8192 * 2);
  // 2^40 / (3 * 2^27) = 2^13 / 3 = 2730.7 FLOP/byte, far above H100's bf16 ridge (~300).
  CHECK(num(j, "intensity") == doctest::Approx(8192.0 / 3.0));
  CHECK(j["bound"] == "compute");
  CHECK(j["class"] == "gemm");
  CHECK(j["dtype"] == "bf16");
  CHECK(j["peak"] == "bf16");
  CHECK(j["shape"] == "m=8192 n=8192 k=8192 batch=1");
  // 128 x 256 tiles: 64 x 32 = 2048 tiles on 132 SMs, 15.5 waves under stream-K.
  CHECK(j["schedule"] == "stream-K");
  CHECK(num(j, "blocks") == 2048);
  CHECK(num(j, "waves") == doctest::Approx(2048.0 / 132));
  CHECK(j["impl"].is_null());
  CHECK(j["kernels"] == 1);
}

TEST_CASE("kernel cli: a GEMV-like GEMM and the streaming kernels are memory-bound") {
  // m = 1: 2 n k FLOPs over 2 (k + n k + n) bytes, about 1 FLOP/byte, two
  // orders of magnitude below any ridge point.
  const auto gemv = kernel_json("gemm --gpu h100_sxm --m 1 --n 16384 --k 16384");
  CHECK(num(gemv, "intensity") == doctest::Approx(2.0 * 16384 * 16384 / (2.0 * (16384 + 16384.0 * 16384 + 16384))));
  CHECK(gemv["bound"] == "memory");
  for (const char* args : {"elementwise --elements 268435456 --inputs 2", "norm --tokens 8192 --hidden 8192",
                           "softmax --rows 65536 --cols 4096", "cast --elements 268435456 --from bf16 --to fp8"}) {
    CAPTURE(args);
    const auto j = kernel_json(std::string(args) + " --gpu h100_sxm");
    CHECK(j["bound"] == "memory");
    CHECK(j["peak"] == "vector");
  }
}

TEST_CASE("kernel cli: non-causal attention FLOPs against causal, by causal_executed_fraction") {
  const std::string shape = "attention --gpu h100_sxm --batch 1 --heads 32 --seq 4096 --head-dim 128 --pass fwd";
  const auto full = kernel_json(shape + " --bidirectional");
  const auto causal = kernel_json(shape + " --causal");
  // Full product: 4 b h s^2 d = 4 * 32 * 4096^2 * 128 = 2^38.
  CHECK(num(full, "flops") == 4.0 * 32 * 4096.0 * 4096 * 128);
  CHECK(num(full, "model_flops") == num(full, "flops"));
  // Causal, flash2 forward at head dim 128 tiles 128 x 64 (attention_tile):
  // executed fraction = 1/2 + max(Br, Bc) / (2 kv_len) = 1/2 + 128 / 8192 = 33/64,
  // so full / causal = 64/33 = 1.9394 (2 less the diagonal tiles run whole).
  CHECK(num(full, "flops") / num(causal, "flops") == doctest::Approx(64.0 / 33.0));
  // Model FLOPs credit causal exactly half.
  CHECK(num(causal, "model_flops") == num(full, "flops") / 2);
  CHECK(causal["shape"] == "batch=1 heads=32 kv_heads=32 seq=4096 kv_seq=4096 head_dim=128 causal");
  CHECK(causal["impl"] == "flash2");
  CHECK(causal["pass"] == "fwd");
}

TEST_CASE("kernel cli: attention backward FLOPs are 2.5x forward; fwd+bwd is their sum") {
  const std::string shape = "attention --gpu h100_sxm --batch 2 --heads 16 --kv-heads 4 --seq 2048 --head-dim 128 "
                            "--bidirectional";
  const auto fwd = kernel_json(shape + " --pass fwd");
  const auto bwd = kernel_json(shape + " --pass bwd");
  const auto both = kernel_json(shape);  // default --pass fwd+bwd
  // flash_attention_backward: 5 matmuls of the forward's 2.
  CHECK(num(bwd, "flops") == 2.5 * num(fwd, "flops"));
  CHECK(num(bwd, "model_flops") == 2.0 * num(fwd, "model_flops"));
  CHECK(num(both, "flops") == num(fwd, "flops") + num(bwd, "flops"));
  CHECK(num(both, "time_s") == doctest::Approx(num(fwd, "time_s") + num(bwd, "time_s")));
  CHECK(both["kernels"] == 2);
  CHECK(both["launches"] == 3);  // forward 1, backward 2 (dO.O preprocess + main)
  CHECK(both["detail_kernel"].is_string());
  // The naive sequence: QK^T, scale, mask, softmax, PV forward; six kernels backward.
  const auto naive = kernel_json("attention --batch 1 --heads 8 --seq 1024 --head-dim 64 --impl naive");
  CHECK(naive["kernels"] == 5 + 6);
}

TEST_CASE("kernel cli: memory-bound kernels' bytes and FLOPs by hand") {
  // LayerNorm over 8192 x 4096 bf16: reads x + weight + bias, writes y + fp32 mean and rstd; 8 FLOP per element.
  const double th = 8192.0 * 4096;
  const auto ln = kernel_json("norm --tokens 8192 --hidden 4096");
  CHECK(num(ln, "read_bytes") == th * 2 + 2 * 4096 * 2);
  CHECK(num(ln, "write_bytes") == th * 2 + 8192 * 8);
  CHECK(num(ln, "flops") == 8 * th);
  CHECK(ln["class"] == "norm");
  // RMSNorm: the weight only, the fp32 rstd only, 4 FLOP per element.
  const auto rms = kernel_json("norm --tokens 8192 --hidden 4096 --rms");
  CHECK(num(rms, "read_bytes") == th * 2 + 4096 * 2);
  CHECK(num(rms, "write_bytes") == th * 2 + 8192 * 4);
  CHECK(num(rms, "flops") == 4 * th);
  // Softmax over 1024 x 4096 fp32: 16 MiB in, 16 MiB out, 5 FLOP per element.
  const auto sm = kernel_json("softmax --rows 1024 --cols 4096 --dtype fp32");
  CHECK(num(sm, "read_bytes") == 1024.0 * 4096 * 4);
  CHECK(num(sm, "write_bytes") == 1024.0 * 4096 * 4);
  CHECK(num(sm, "flops") == 5.0 * 1024 * 4096);
  CHECK(sm["class"] == "softmax");
  // a * b + c over 2^20 bf16 elements: three reads, one write, 2 FLOP per element.
  const auto ew = kernel_json("elementwise --elements 1048576 --inputs 3");
  CHECK(num(ew, "read_bytes") == 3.0 * 1048576 * 2);
  CHECK(num(ew, "write_bytes") == 1048576.0 * 2);
  CHECK(num(ew, "flops") == 2.0 * 1048576);
  CHECK(ew["class"] == "elementwise");
  // bf16 -> fp8 (scaled: 2 FLOP per element) and bf16 -> fp32 (1).
  const auto c8 = kernel_json("cast --elements 1048576 --from bf16 --to fp8");
  CHECK(num(c8, "read_bytes") == 1048576.0 * 2);
  CHECK(num(c8, "write_bytes") == 1048576.0);
  CHECK(num(c8, "flops") == 2.0 * 1048576);
  CHECK(c8["dtype"] == "fp8_e4m3");
  CHECK(c8["class"] == "cast");
  const auto c32 = kernel_json("cast --elements 1048576 --from bf16 --to fp32");
  CHECK(num(c32, "write_bytes") == 1048576.0 * 4);
  CHECK(num(c32, "flops") == 1048576.0);
}

TEST_CASE("kernel cli: memory kernel builders carry their class") {
  CHECK(graph::elementwise_kernel(16, 1, spec::Dtype::kBf16).cls == spec::KernelClass::kElementwise);
  CHECK(graph::elementwise_kernel(16, 1, spec::Dtype::kBf16).flops == 16);  // a unary op counts one
  CHECK(graph::norm_kernel(4, 8, false, spec::Dtype::kBf16).cls == spec::KernelClass::kNorm);
  CHECK(graph::softmax_kernel(4, 8, spec::Dtype::kBf16).cls == spec::KernelClass::kSoftmax);
  CHECK(graph::cast_kernel(16, spec::Dtype::kBf16, spec::Dtype::kFp8E4M3).cls == spec::KernelClass::kCast);
}

TEST_CASE("kernel cli: options reach the cost (power limit, CUDA graphs, calibration, table, -o)") {
  const std::string gemm = "gemm --gpu h100_sxm --m 8192 --n 8192 --k 8192";
  const auto base = kernel_json(gemm);
  CHECK(base["power_limit_w"].is_null());
  CHECK(base["cuda_graphs"] == false);
  // A lower board limit lowers the clock (cube root of the power ratio), so
  // the peak falls and a compute-bound GEMM slows.
  const auto capped = kernel_json(gemm + " --power-limit 350");
  CHECK(num(capped, "power_limit_w") == 350);
  CHECK(num(capped, "peak_flop_per_s") < num(base, "peak_flop_per_s"));
  CHECK(num(capped, "time_s") > num(base, "time_s"));
  const auto graphs = kernel_json(gemm + " --cuda-graphs --no-calibration");
  CHECK(graphs["cuda_graphs"] == true);
  CHECK(graphs["calibrated"] == false);

  const auto table = test::run_cli("kernel " + gemm);
  CHECK(table.status == 0);
  CHECK(table.out.rfind("gemm on NVIDIA H100 SXM5 80GB: m=8192 n=8192 k=8192 batch=1, bf16\n", 0) == 0);
  for (const char* label : {"time", "bound", "FLOP/s (hardware FLOPs)", "FLOP/s (model FLOPs)", "HBM bytes/s",
                            "intensity", "ridge point", "tile M (Br)", "split-K", "blocks", "waves", "efficiency"})
    CHECK(table.out.find(label) != std::string::npos);
  CHECK_FALSE(std::regex_search(table.out, std::regex("\\b(inf|nan)\\b", std::regex::icase)));

  const fs::path out = fs::temp_directory_path() / "ridgeline_kernel_cli_ok.json";
  fs::remove(out);
  const auto written = test::run_cli("kernel " + gemm + " --format json -o " + out.string());
  CHECK(written.status == 0);
  CHECK(written.out.empty());
  REQUIRE(fs::exists(out));
  fs::remove(out);
}

TEST_CASE("kernel cli: every bad input is one exact line, exit 2, and no output file") {
  struct Case {
    const char* args;
    const char* err;
  };
  const Case cases[] = {
      {"gemm --m 0 --n 8 --k 8", "error: --m: expected a whole number >= 1, got 0\n"},
      {"gemm --m 8 --n -4 --k 8", "error: --n: expected a whole number >= 1, got -4\n"},
      {"gemm --m 8 --n 8 --k 1.5", "error: --k: expected a whole number, got \"1.5\"\n"},
      {"gemm --m 8 --n 8 --k 8 --batch 0", "error: --batch: expected a whole number >= 1, got 0\n"},
      {"gemm --m 8 --n 8 --k 8 --dtype bf17",
       "error: --dtype: expected one of bf16, fp16, fp32, tf32, fp8, fp8_e4m3, fp8_e5m2, int8, nvfp4, got \"bf17\"\n"},
      {"gemm --gpu a100_sxm_80gb --m 8 --n 8 --k 8 --dtype fp8",
       "error: --dtype: fp8 needs fp8 tensor cores; NVIDIA A100 SXM4 80GB has none\n"},
      {"gemm --gpu h100_sxm --m 8 --n 8 --k 8 --dtype nvfp4",
       "error: --dtype: nvfp4 needs fp4 tensor cores; NVIDIA H100 SXM5 80GB has none\n"},
      {"gemm --m 8 --n 8 --k 8 --power-limit 0", "error: --power-limit: expected watts greater than zero, got 0\n"},
      {"gemm --m 8 --n 8 --k 8 --format csv", "error: --format: expected one of table, json, got \"csv\"\n"},
      {"attention --batch 1 --heads 32 --kv-heads 5 --seq 128 --head-dim 64",
       "error: --heads: 32 is not a multiple of --kv-heads 5\n"},
      {"attention --batch 1 --heads 32 --seq 0 --head-dim 64", "error: --seq: expected a whole number >= 1, got 0\n"},
      {"attention --batch 1 --heads 32 --seq 128 --head-dim 64 --impl flash4",
       "error: --impl: expected one of naive, flash, flash2, flash3, cudnn, triton, triton_legacy, got \"flash4\"\n"},
      {"attention --gpu a100_sxm_80gb --batch 1 --heads 32 --seq 128 --head-dim 64 --impl flash3",
       "error: --impl: flash3 needs Hopper (wgmma and TMA); NVIDIA A100 SXM4 80GB is ampere\n"},
      {"attention --gpu a100_sxm_80gb --batch 1 --heads 32 --seq 128 --head-dim 64 --dtype fp8",
       "error: --dtype: fp8 needs fp8 tensor cores; NVIDIA A100 SXM4 80GB has none\n"},
      {"attention --batch 1 --heads 32 --seq 128 --head-dim 64 --dtype fp32",
       "error: --dtype: expected one of bf16, fp16, fp8, got \"fp32\"\n"},
      {"attention --batch 1 --heads 32 --seq 128 --head-dim 64 --pass both",
       "error: --pass: expected one of fwd, bwd, fwd+bwd, got \"both\"\n"},
      {"elementwise --elements 1024 --inputs 4", "error: --inputs: expected a whole number from 1 to 3, got 4\n"},
      {"norm --tokens 1024 --hidden 0 --rms", "error: --hidden: expected a whole number >= 1, got 0\n"},
      {"softmax --rows x --cols 8", "error: --rows: expected a whole number, got \"x\"\n"},
      {"cast --elements 1024 --to nvfp4",
       "error: --to: expected one of bf16, fp16, fp32, fp8, fp8_e4m3, fp8_e5m2, int8, got \"nvfp4\"\n"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const fs::path out = fs::temp_directory_path() / "ridgeline_kernel_cli_error.out";
    fs::remove(out);
    const auto r = test::run_cli(std::string("kernel ") + c.args + " -o " + out.string());
    CHECK(r.status == 2);
    CHECK(r.err == c.err);
    CHECK(r.out.empty());
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("kernel cli: GEMM and attention times carry their prediction interval") {
  for (const char* args : {"gemm --m 4096 --n 4096 --k 4096",
                           "attention --batch 1 --heads 32 --kv-heads 8 --seq 4096 --head-dim 128 --impl flash3"}) {
    CAPTURE(args);
    const auto j = kernel_json(args);
    CHECK(num(j, "interval_level") == doctest::Approx(0.8));
    CHECK(num(j, "time_lo_s") <= num(j, "time_s"));
    CHECK(num(j, "time_hi_s") >= num(j, "time_s"));
    CHECK(num(j, "interval_rows") >= 20);
    const auto wide = kernel_json(std::string(args) + " --interval-level 0.95");
    CHECK(num(wide, "time_lo_s") <= num(j, "time_lo_s"));
    CHECK(num(wide, "time_hi_s") >= num(j, "time_hi_s"));
  }
  // The memory-bound classes have no published kernel rows to draw on: null.
  const auto e = kernel_json("elementwise --elements 1048576 --inputs 2");
  CHECK(e["time_lo_s"].is_null());
  const auto bad = test::run_cli("kernel gemm --m 8 --n 8 --k 8 --interval-level 2");
  CHECK(bad.status == 2);
  CHECK(bad.err == "error: --interval-level: expected a level from 0.5 to 0.99 (0.8 = an 80% interval), got 2\n");
}
