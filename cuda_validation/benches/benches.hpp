// The benchmark classes. Each function runs its cases through the suite,
// which records one measurement per case (see docs/measurements.md).
#pragma once

namespace ridgeline::cuda_bench {

class Suite;

void run_hbm(Suite& suite);          // hbm_copy, hbm_triad
void run_sram(Suite& suite);         // sram
void run_gemm(Suite& suite);         // gemm
void run_elementwise(Suite& suite);  // elementwise_unfused, elementwise_fused
void run_softmax(Suite& suite);      // softmax
void run_layernorm(Suite& suite);    // layernorm
void run_attention(Suite& suite);    // attention_naive, attention_flash
void run_launch(Suite& suite);       // launch, launch_graph

}  // namespace ridgeline::cuda_bench
