// CPU offload's step cost on one GPU: the bytes it moves over the host link
// (PCIe or NVLink-C2C, spec::HostSpec) and the seconds the step waits for
// them and for the CPU optimizer. The memory it moves to the host is
// memory::model_state's; this is the time. Units: bytes, seconds.
//
// ZeRO-Offload (Ren et al. 2021, "ZeRO-Offload: Democratizing Billion-Scale
// Model Training", Sec. 4): forward and backward stay on the GPU; the
// gradient shard goes device-to-host as backward produces it (overlapped
// with backward), CPU Adam updates the fp32 master weights and moments on
// the host, and the updated 16-bit parameter shard comes back host-to-device
// before the next forward. Without the one-step delayed parameter update
// (not modelled) the CPU step and the parameter copy are exposed: the next
// forward needs the new parameters.
//
// ZeRO-Infinity parameter offload (Rajbhandari et al. 2021, "ZeRO-Infinity:
// Breaking the GPU Memory Wall for Extreme Scale Deep Learning", Sec. 6):
// the 16-bit parameter shard lives on the host and each layer's shard comes
// host-to-device before its forward and again before its backward, every
// micro-batch, prefetched behind compute; the updated parameters stay on the
// host (no parameter copy after the step).
#pragma once

#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/techniques/params.hpp"

namespace ridgeline::techniques {

/// Per step, per GPU. All zero for a plan without offload.
struct OffloadCost {
  double cpu_params = 0;          // parameters CPU Adam updates (this GPU's trainable shard)
  double grad_d2h_bytes = 0;      // gradient shard device-to-host, over the step
  double param_h2d_bytes = 0;     // updated 16-bit parameter shard host-to-device after the step
  double param_fetch_bytes = 0;   // parameter offload: shards fetched before forward and backward, over the step
  double grad_d2h_s = 0;          // link time of grad_d2h_bytes
  double param_h2d_s = 0;         // link time of param_h2d_bytes
  double param_fetch_s = 0;       // link time of param_fetch_bytes
  double cpu_optimizer_s = 0;     // cpu_params / the host's CPU Adam rate
  /// Paged optimizer state (optimizer.paged) that does not fit beside the
  /// rest (memory::MemoryResult::paged_to_host): prefetched in for the
  /// update and evicted again, each way per step, and its link time (the
  /// two directions of the full-duplex link overlap: bytes / link), exposed.
  double paged_bytes = 0, paged_s = 0;
  /// Activation offloading (offload.activations): the saved activations to
  /// the host in each forward and back in each backward, over the step
  /// (memory::MemoryResult::offloaded_activations x 2 x micro-batches), and
  /// their link time; each direction hides behind its pass on the side
  /// stream: exposed max(0, t_copy - forward_s) + max(0, t_copy - backward_s)
  /// per micro-batch.
  double activation_bytes = 0, activation_s = 0;
  double hidden_s = 0;            // of the transfers, the time behind forward and backward
  double exposed_s = 0;           // what the step waits for (added to the step time)
};

/// The offload cost of a step of `micro_batches` micro-batches, each taking
/// `forward_s` and `backward_s` (recomputation included) of kernel time:
///   P = trainable parameters / data-parallel group (ZeRO shards the state)
///   gradient D2H: P x gradient bytes per copy, once per step, or once per
///     micro-batch where the framework reduces gradients every micro-batch
///     under ZeRO >= 2 (DeepSpeed: each reduced partition is copied to the
///     host's fp32 gradient buffer); each copy hides behind its
///     micro-batch's backward: exposed max(0, t_copy - backward_s)
///   CPU optimizer: P / cpu_adam_params_per_s, exposed
///   parameter H2D: P x weight bytes / link, exposed (optimizer offload only)
///   parameter fetch: 2 x (the weight shard) per micro-batch, prefetched
///     behind the micro-batch's compute: exposed max(0, t_fetch - forward_s - backward_s)
/// Allocation-free; a plan without offload returns zeros at once.
OffloadCost offload_cost(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw,
                         double micro_batches, double forward_s, double backward_s);
/// The same with local_params(m, p) given.
OffloadCost offload_cost(const spec::PlanSpec& p, const spec::HardwareSpec& hw, const LocalParams& lp,
                         double micro_batches, double forward_s, double backward_s);

}  // namespace ridgeline::techniques
