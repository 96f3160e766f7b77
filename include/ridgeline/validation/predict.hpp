// Predicting one published row through the engine, compared like with like:
// end-to-end rows with engine::evaluate of the mapped model and plan;
// per-layer rows with the engine's step graph of the mapped model, each
// kernel costed by engine::evaluate_kernel; GEMM and attention rows as the
// kernels graph/kernels.hpp builds for their shape (mapping.hpp's
// KernelCase), and streaming, shared-memory and launch rows as one
// graph::Kernel, each costed by engine::evaluate_kernel. A row Ridgeline cannot predict gives its Skip.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/published.hpp"
#include "ridgeline/uncertainty/interval.hpp"
#include "ridgeline/validation/mapping.hpp"
#include "ridgeline/validation/skip.hpp"
#include "ridgeline/validation/stats.hpp"

namespace ridgeline::validation {

struct RowPrediction {
  Comparison primary;                    // the first stated quantity; the one the statistics use
  std::vector<Comparison> secondary;     // other stated quantities, for reading
  std::string config;                    // the mapped configuration, in words
  std::vector<std::string> assumptions;  // what Ridgeline had to assume
  bool fits = true;                      // end-to-end: the memory model agrees the run fits
  /// End-to-end rows that state measured.peak_memory_gib: that peak beside the
  /// memory model's, of the kind the row measured (memory_kind: reserved =
  /// engine allocated x (1 + the framework's allocator reserve), the
  /// MemoryResult::reserved that calibrate --runs compares; allocated =
  /// MemoryResult::allocated), in GiB. Not among primary or secondary: the
  /// statistics of time and of memory are kept apart.
  std::optional<Comparison> memory;
  std::string memory_kind;  // "reserved" or "allocated" when memory is set
  std::string precision;                 // the plan's precision or the kernel's dtype ("bf16", "fp8"); "" when none
  /// End-to-end rows: what makes the run comparable to another (its interval pool).
  std::optional<uncertainty::RunTraits> run;
  /// GEMM and attention rows: the same for the kernel.
  std::optional<uncertainty::KernelTraits> kernel;
};

/// Why a row's quantity is outside the model, before looking at its GPU
/// (clock observations, tensor-core instruction rates, cache latencies, host-side launch costs).
std::optional<Skip> out_of_scope(const spec::PublishedRow& row);

/// Predicts a row of any category on `hw`.
OrSkip<RowPrediction> predict_row(const spec::PublishedRow& row, const spec::HardwareSpec& hw,
                                  const PredictOptions& opt = {});

}  // namespace ridgeline::validation
