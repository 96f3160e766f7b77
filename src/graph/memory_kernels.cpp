#include "ridgeline/graph/memory_kernels.hpp"

#include <algorithm>

namespace ridgeline::graph {

namespace {

Kernel memory_kernel(std::string_view name, Op op, KernelClass cls, Dtype dtype) {
  Kernel k;
  k.name = name;
  k.op = op;
  k.cls = cls;
  k.dtype = dtype;
  k.launches = 1;
  return k;
}

}  // namespace

Kernel elementwise_kernel(double elements, int inputs, Dtype dtype) {
  const double e = spec::bytes_per_element(dtype);
  Kernel k = memory_kernel("elementwise", Op::kOther, KernelClass::kElementwise, dtype);
  k.flags = kPointwise;
  k.read_bytes = elements * inputs * e;
  k.write_bytes = elements * e;
  k.flops = elements * std::max(1, inputs - 1);
  return k;
}

Kernel norm_kernel(double tokens, double hidden, bool rms, Dtype dtype) {
  const double e = spec::bytes_per_element(dtype);
  const double elements = tokens * hidden;
  Kernel k = memory_kernel(rms ? "rms_norm" : "layer_norm", Op::kOther, KernelClass::kNorm, dtype);
  if (rms) {
    k.read_bytes = elements * e + hidden * e;
    k.write_bytes = elements * e + tokens * 4;
    k.flops = 4 * elements;
  } else {
    k.read_bytes = elements * e + 2 * hidden * e;
    k.write_bytes = elements * e + tokens * 8;
    k.flops = 8 * elements;
  }
  k.chain_bytes = elements * e;  // y, which the next kernel reads (and whose gradient the backward reads)
  return k;
}

void eager_layer_norm_backward(Kernel& backward) { backward.read_bytes *= 2; }

Kernel softmax_kernel(double rows, double cols, Dtype dtype) {
  const double e = spec::bytes_per_element(dtype);
  const double elements = rows * cols;
  Kernel k = memory_kernel("softmax", Op::kSoftmax, KernelClass::kSoftmax, dtype);
  k.read_bytes = elements * e;
  k.write_bytes = elements * e;
  k.flops = 5 * elements;
  return k;
}

Kernel cast_kernel(double elements, Dtype from, Dtype to) {
  Kernel k = memory_kernel("cast", Op::kCast, KernelClass::kCast, to);
  k.read_bytes = elements * spec::bytes_per_element(from);
  k.write_bytes = elements * spec::bytes_per_element(to);
  k.flops = elements * (spec::bytes_per_element(to) == 1.0 ? 2 : 1);
  return k;
}

Kernel eager_cross_entropy_kernel(double logits, double e) {
  Kernel k = memory_kernel("cross_entropy", Op::kLoss, KernelClass::kLoss, Dtype::kFp32);
  k.group = FuseGroup::kLoss;
  k.read_bytes = logits * e + logits * 4 * 2;
  k.write_bytes = logits * 4 * 2;
  k.launches = 3;
  k.flops = 6 * logits;
  return k;
}

}  // namespace ridgeline::graph
