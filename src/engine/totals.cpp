#include <algorithm>
#include <cmath>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/spec/precision.hpp"
#include "ridgeline/techniques/params.hpp"

namespace ridgeline::engine {

Goodput expected_wall(double ideal_s, double write_s, double mtbf_s, double restart_s, double interval_s) {
  Goodput g;
  const bool failures = mtbf_s > 0;
  // Young/Daly's optimum where no interval is given; none without failures.
  g.interval_s = interval_s > 0 ? interval_s : failures ? std::sqrt(2.0 * write_s * mtbf_s) : 0.0;
  const double overhead = g.interval_s > 0 ? 1.0 + write_s / g.interval_s : 1.0;
  const double lost = failures ? ((g.interval_s + write_s) / 2.0 + restart_s) / mtbf_s : 0.0;
  const double denom = 1.0 - lost;
  if (!(denom > 0) || !(ideal_s >= 0)) {
    g.completes = false;
    return g;
  }
  g.wall_s = ideal_s * overhead / denom;
  g.goodput = g.wall_s > 0 ? ideal_s / g.wall_s : 1.0;
  g.expected_failures = failures ? g.wall_s / mtbf_s : 0.0;
  return g;
}

TokensBasis tokens_basis(const spec::PlanSpec& p) {
  return p.tokens > 0                                   ? TokensBasis::kPlan
         : p.finetune.mode != spec::FinetuneMode::kFull ? TokensBasis::kPerBillion
                                                        : TokensBasis::kChinchilla;
}

void training_totals(TrainingTotals& tt, const StepResult& st, const techniques::LocalParams& lp,
                     const spec::PlanSpec& p, const spec::HardwareSpec& hw) {
  tt = TrainingTotals{};
  const double gpus = static_cast<double>(st.gpus);
  const double step = st.time_s;
  // A plan's tokens; else a fine-tune's 1B-token rate; else Chinchilla's D ~ 20 N.
  tt.basis = tokens_basis(p);
  tt.tokens_default = tt.basis == TokensBasis::kChinchilla;
  tt.tokens = tt.basis == TokensBasis::kPlan         ? p.tokens
              : tt.basis == TokensBasis::kPerBillion ? 1e9
                                                     : 20.0 * lp.model_total;
  tt.steps = tt.tokens / st.tokens_per_step;
  tt.ideal_wall_s = tt.steps * step;

  // Checkpoint: the trained weights at their working width (a frozen base is
  // not rewritten), fp32 masters and optimizer state, once over the job;
  // every rank writes its shard at once, so the job's bandwidth sets the time.
  const spec::PrecisionPolicy pol = spec::precision_policy(p);
  const bool frozen_base = lp.frozen > 0;
  const double written_weights = frozen_base ? lp.model_trainable : lp.model_total;
  const double state_b = pol.master_bytes + techniques::optimizer_state_bytes(p.optimizer, lp, pol.state_elem_bytes);
  tt.checkpoint_bytes = written_weights * pol.weight_bytes + lp.model_trainable * state_b;
  tt.checkpoint_bandwidth_bytes_per_s =
      p.checkpoint_bandwidth_bytes_per_s > 0 ? p.checkpoint_bandwidth_bytes_per_s : kCheckpointBytesPerSPerGpu * gpus;
  tt.checkpoint_write_s = tt.checkpoint_bytes / tt.checkpoint_bandwidth_bytes_per_s;
  tt.failure_rate_per_gpu_hour = p.failure_rate_per_gpu_hour >= 0 ? p.failure_rate_per_gpu_hour
                                 : hw.failure_rate_per_gpu_hour > 0 ? hw.failure_rate_per_gpu_hour
                                                                    : kLlama3FailuresPerGpuHour;
  tt.mtbf_s = tt.failure_rate_per_gpu_hour > 0 ? 3600.0 / (tt.failure_rate_per_gpu_hour * gpus) : 0.0;
  // A restart reads the checkpoint back at the write bandwidth.
  tt.restart_s = (p.restart_s > 0 ? p.restart_s : kDefaultRestartS) + tt.checkpoint_write_s;
  const Goodput g = expected_wall(tt.ideal_wall_s, tt.checkpoint_write_s, tt.mtbf_s, tt.restart_s,
                                  p.checkpoint_interval_s);
  tt.completes = g.completes;
  tt.wall_s = g.wall_s;
  tt.goodput = g.goodput;
  tt.checkpoint_interval_s = g.interval_s;
  tt.expected_failures = g.expected_failures;

  tt.gpu_hours = tt.wall_s * gpus / 3600.0;
  tt.cost_usd = tt.gpu_hours * hw.price_per_gpu_hour_usd;
  // Power: idle to TDP by the share of the step in compute-bound kernels.
  tt.compute_bound_share = step > 0 ? std::clamp(st.compute_bound_s / step, 0.0, 1.0) : 0.0;
  // A power limit (nvidia-smi -pl) caps the board below its TDP.
  const double top_w = p.power_limit_w > 0 && hw.tdp_w > 0 ? std::min(p.power_limit_w, hw.tdp_w) : hw.tdp_w;
  const double idle_w = std::min(hw.idle_w > 0 ? hw.idle_w : kIdlePowerFraction * hw.tdp_w, top_w);
  tt.idle_w = idle_w;
  tt.power_given = p.power_utilization > 0;
  tt.power_w = tt.power_given ? p.power_utilization * hw.tdp_w
                              : idle_w + (top_w - idle_w) * tt.compute_bound_share;
  tt.power_utilization = hw.tdp_w > 0 ? tt.power_w / hw.tdp_w : 0.0;
  tt.pue = p.pue;
  tt.energy_kwh = gpus * tt.power_w * tt.wall_s * tt.pue / 3.6e6;
  tt.carbon_kg = p.grid_carbon_g_per_kwh >= 0 ? tt.energy_kwh * p.grid_carbon_g_per_kwh / 1000.0 : -1.0;
}

}  // namespace ridgeline::engine
