// Row-wise kernels shared by benchmarks: softmax (also the middle step of
// naive attention).
#pragma once

#include <cstddef>

namespace ridgeline::host_bench {

/// out[r] = softmax(scale * in[r]) for each of `rows` rows of `cols` floats
/// (max subtracted first); in == out is allowed.
void softmax_rows(const float* in, float* out, size_t rows, size_t cols, float scale);

}  // namespace ridgeline::host_bench
