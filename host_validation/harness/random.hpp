// Inputs and checks: seeded uniform data, and seeded sample positions for
// checking outputs without comparing every element.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace ridgeline::host_bench {

template <class T>
void fill_uniform(T* p, size_t n, std::uint32_t seed, double lo, double hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(d(gen));
}

/// min(n, count) positions in [0, n), drawn with replacement.
inline std::vector<size_t> sample_indices(size_t n, size_t count, std::uint32_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<size_t> idx(std::min(n, count));
  for (auto& i : idx) i = static_cast<size_t>(gen() % n);
  return idx;
}

}  // namespace ridgeline::host_bench
