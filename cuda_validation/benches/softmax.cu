// Row-wise softmax, bf16 in and out, fp32 math (rowwise.cuh): rows x cols
// with cols in {256, 1024, 4096, 8192, 16384} and rows chosen so the tensor
// is 64 MiB and 256 MiB (quick: 128 MiB).
//
// FLOP: 5 per element (scale, max, subtract, exp, divide; the sum's add is
// folded in). Bytes: read + write, 4 x rows x cols. Check: four whole rows
// against a float64 host softmax of the same bf16 inputs.

#include "benches/benches.hpp"
#include "benches/rowwise.cuh"

#include <cmath>
#include <string>

namespace ridgeline::cuda_bench {

namespace {

void softmax_case(Suite& suite, std::int64_t rows, int cols) {
  std::string name = "softmax_bf16_" + std::to_string(rows) + "x" + std::to_string(cols);
  suite.run_case(name, [&] {
    std::size_t n = static_cast<std::size_t>(rows) * cols;
    DeviceBuffer in(n * 2), out(n * 2);
    fill_uniform(in.as<__nv_bfloat16>(), n, 41, -8.0f, 8.0f, suite.stream());
    auto run = [&](cudaStream_t stream) {
      if (!launch_softmax(in.get(), out.get(), rows, cols, 1.0f, stream)) throw Skip("unsupported column count");
      RIDGELINE_CUDA_CHECK_LAUNCH();
    };
    Timing timing = suite.time(run);

    CheckResult check;
    for (std::int64_t row : sample_indices(rows, 4, 5)) {
      std::vector<std::int64_t> idx = index_range(row * cols, cols);
      std::vector<float> x = gather_to_host(in.as<__nv_bfloat16>(), idx, suite.stream());
      std::vector<float> y = gather_to_host(out.as<__nv_bfloat16>(), idx, suite.stream());
      double m = -INFINITY, sum = 0.0;
      for (float v : x) m = std::fmax(m, static_cast<double>(v));
      for (float v : x) sum += std::exp(static_cast<double>(v) - m);
      for (int c = 0; c < cols; ++c) {
        double want = std::exp(static_cast<double>(x[c]) - m) / sum;
        check.compare(y[c], want, 0x1p-7 * want + 1e-7);  // bf16 output rounding is 2^-9 relative
      }
    }

    Record r;
    r.name = name;
    r.cls = spec::MeasurementClass::kSoftmax;
    r.dtype = "bf16";
    r.m = rows;
    r.n = cols;
    r.elements = static_cast<std::int64_t>(n);
    r.flops = 5.0 * static_cast<double>(n);
    r.bytes = 4.0 * static_cast<double>(n);
    r.algorithm = row_config_label(cols);
    suite.add(r, timing, check);
  });
}

}  // namespace

void run_softmax(Suite& suite) { for_each_row_shape(suite, softmax_case); }

}  // namespace ridgeline::cuda_bench
