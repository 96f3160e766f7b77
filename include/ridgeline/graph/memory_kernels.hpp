// Memory-bound kernels by shape, for single-kernel clients (the `ridgeline
// kernel` command): a streaming elementwise op, a fused LayerNorm or RMSNorm,
// a row softmax and a type cast. Each builder states the bytes it reads and
// writes and the FLOPs it counts per element; the cost model has one memory
// efficiency per class (elementwise, norm, softmax, cast).
// Units: elements, FLOP and bytes per instance.
#pragma once

#include "ridgeline/graph/graph.hpp"

namespace ridgeline::graph {

/// out = f(in_1, ..., in_n) over `elements` elements, all `dtype`-wide:
/// reads n e and writes e bytes per element; n inputs combine with n - 1
/// operations and a unary op (scale, ReLU) counts one, so
///   flops = elements * max(1, n - 1)      (a + b: 1, a * b + c: 2).
Kernel elementwise_kernel(double elements, int inputs, Dtype dtype);

/// One fused normalization kernel over `tokens` rows of `hidden` elements.
///  - LayerNorm (PyTorch's native_layer_norm, one kernel even in eager mode):
///    reads x (T h e) and the weight and bias (2 h e), writes y (T h e) and
///    the fp32 mean and rstd kept for backward (8 T); 8 FLOP per element:
///    the Welford update (4), (x - mean) * rstd (2), * weight + bias (2).
///  - RMSNorm (fused, as Apex's FusedRMSNorm and Transformer Engine): reads
///    x (T h e) and the weight (h e), writes y (T h e) and the fp32 rstd
///    (4 T); 4 FLOP per element: x^2, the sum, * rstd, * weight.
/// The per-row rsqrt is left out (T of T h elements). y is its chain output
/// (Kernel::chain_bytes, T h e): what graph::derive_backward reads back as
/// its gradient.
Kernel norm_kernel(double tokens, double hidden, bool rms, Dtype dtype);

/// Eager PyTorch's LayerNorm backward with a trained weight, from the one
/// pass graph::derive_backward gives a norm (the saved input, the output
/// gradient and the weight read, the input gradient written): two kernels,
/// layer_norm_grad_input_kernel and GammaBetaBackwardCUDAKernel, the second
/// reading the output gradient and the input again for the weight's and
/// bias's gradients (aten/src/ATen/native/cuda/layer_norm_kernel.cu,
/// LayerNormBackwardKernelImplInternal): the reads doubled.
void eager_layer_norm_backward(Kernel& backward);

/// Softmax over each of `rows` rows of `cols` elements, in and out
/// `dtype`-wide: reads and writes R C e bytes; 5 FLOP per element (the row
/// max, x - max, exp, the row sum, the division), as the naive attention's
/// softmax (naive_attention_kernels).
Kernel softmax_kernel(double rows, double cols, Dtype dtype);

/// A type cast of `elements` elements: reads e_from and writes e_to bytes
/// per element; 1 FLOP per element (the conversion), plus 1 for the
/// scale multiply when the target is 8 bits wide (fp8, int8: scaled casts,
/// as the fp8 input cast of the precision pass).
Kernel cast_kernel(double elements, Dtype from, Dtype to);

/// Eager cross-entropy under autocast over `logits` 16-bit logits of
/// `e` bytes each (F.cross_entropy: logits.float(), log_softmax, nll_loss;
/// three kernels): the upcast reads e and writes 4 bytes per logit, the
/// log_softmax reads 4 and writes 4, the nll reads the fp32 log-probabilities
/// (4); 6 FLOP per logit. The forward of the training loss's eager chain
/// (graph::build_forward) and of each training metric (a framework's
/// train_metrics).
Kernel eager_cross_entropy_kernel(double logits, double e);

}  // namespace ridgeline::graph
