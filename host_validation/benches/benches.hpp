// The benchmarks. Each function builds the cases of the classes the suite
// wants, runs them through Suite::run, which records one measurement per
// case (docs/measurements.md), and returns without a case when the suite
// wants none of its classes.
#pragma once

namespace ridgeline::host_bench {

class Suite;

void run_launch(Suite& suite);       // launch
void run_stream(Suite& suite);       // hbm_copy, hbm_triad
void run_gemm(Suite& suite);         // gemm
void run_elementwise(Suite& suite);  // elementwise_unfused, elementwise_fused
void run_rowwise(Suite& suite);      // softmax, layernorm
void run_attention(Suite& suite);    // attention_naive, attention_flash

}  // namespace ridgeline::host_bench
