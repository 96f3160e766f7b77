#include "ridgeline/techniques/passes.hpp"

namespace ridgeline::techniques {

void build_microbatch_base(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                           const spec::HardwareSpec& hw) {
  graph::build_forward(m, p, g);
  apply_attention(g, m, p, hw);
  apply_fusion(g, m, p);
  apply_precision(g, m, p, hw);
  apply_finetune(g, m, p);
  graph::derive_backward(g);
  apply_eager_layer_norm_backward(g, m, p);
  apply_train_metrics(g, p);
}

void finish_microbatch(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                       const spec::HardwareSpec& hw) {
  apply_recompute(g, p);
  apply_parallel(g, m, p, hw);
  apply_hessian_estimate(g, p);
}

void build_microbatch(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                      const spec::HardwareSpec& hw) {
  build_microbatch_base(g, m, p, hw);
  finish_microbatch(g, m, p, hw);
}

void append_step_kernels(graph::Graph& g, const spec::ModelSpec& m, const spec::PlanSpec& p, const LocalParams& lp) {
  apply_data_parallel(g, m, p, lp);
  apply_optimizer(g, p, lp);
}

void append_step_kernels(graph::Graph& g, const spec::ModelSpec& m, const spec::PlanSpec& p) {
  append_step_kernels(g, m, p, local_params(m, p));
}

void build_step(graph::Graph& g, const spec::ModelSpec& m, const spec::PlanSpec& p,
                const spec::HardwareSpec& hw) {
  build_microbatch(g, m, p, hw);
  append_step_kernels(g, m, p);
}

}  // namespace ridgeline::techniques
