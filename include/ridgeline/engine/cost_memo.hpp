// Kernel costs kept from one micro-batch graph for the next, for sweeps.
// A search builds one graph per pipeline degree of a micro-batch shape (the
// same TP, CP, EP, micro-batch, recomputation, precision and framework);
// those graphs hold the same kernels at other counts (count = layers on the
// stage), and cost::cost_kernel reads a kernel's shape, never its count or
// what it saves for backward. So each kernel whose cost inputs equal the
// kept kernel's at its position takes the kept cost, and only the others
// are costed (and kept). The sums are then formed exactly as without the
// memo, in the same order, so the summary is the same to the bit.
// Units: as cost::KernelCost (seconds per instance).
#pragma once

#include <vector>

#include "ridgeline/engine/engine.hpp"

namespace ridgeline::engine {

struct CostMemo {
  std::vector<graph::Kernel> kernels;
  std::vector<cost::KernelCost> costs;
  const cost::CostParams* params = nullptr;  // the parameters the costs were formed under
  bool cuda_graphs = false;
  /// Kernels costed and kernels that took a kept cost, since construction.
  std::uint64_t costed = 0, reused = 0;
  /// Shapes and collectives costed, across graphs and layouts (the memo's
  /// owner passes it on to finish through EvalOptions::cache).
  cost::KernelCache cache;
};

/// Whether two kernels have the same cost inputs: every field but the
/// instance count and the saved-tensor fields (saved bytes, their
/// attention-core part, the fraction alive, the transient workspace).
bool same_cost_inputs(const graph::Kernel& a, const graph::Kernel& b);

/// summarize_microbatch (no kernel rows) with the costs taken from, and
/// kept in, `memo` (one per thread; allocation-free once it has held a
/// graph as long as this one). `params`: techniques::stage_params(m, p)
/// when the caller has them (a search forms them once per TP, PP, EP and
/// stage split, not once per graph); nullptr: formed here. `base`:
/// techniques::build_microbatch_base(m, p) when the caller has it (plans
/// that differ only in recomputation share it); nullptr: built here.
void summarize_microbatch(MicrobatchSummary& s, graph::Graph& g, const spec::ModelSpec& m,
                          const spec::MicrobatchPlan& p, const spec::HardwareSpec& hw, const cost::CostParams& c,
                          CostMemo& memo, const techniques::StageParams* params = nullptr,
                          const graph::Graph* base = nullptr);

/// summarize_microbatch in its two halves, which read nothing of each
/// other, for a search that judges memory first: summarize_graph builds the
/// graph and forms what finish_memory reads (graph facts, stage parameters,
/// the model's counts; the running sums zero); summarize_costs costs the
/// graph it built and forms the running sums finish_time reads. A graph
/// none of whose layouts fits is never costed.
void summarize_graph(MicrobatchSummary& s, graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                     const spec::HardwareSpec& hw, const techniques::StageParams* params = nullptr,
                     const graph::Graph* base = nullptr);
void summarize_costs(MicrobatchSummary& s, const graph::Graph& g, const spec::ModelSpec& m,
                     const spec::MicrobatchPlan& p, const cost::CostParams& c, CostMemo& memo);

}  // namespace ridgeline::engine
