// Readers for what a training run already writes, each giving the run's
// measurement (spec/runs.hpp) with the basis it was made on. Each format is
// read as its own source code writes it:
//
//   torchtitan   the training log line of torchtitan/components/metrics.py
//                (MetricsProcessor.log): "step: 10  loss: ...  memory: 61.30GiB(77.40%)
//                tps: 5,762  tflops: ...", where tps = tokens / (interval x
//                non-data-parallel size), tokens per second per GPU, and memory
//                is max_reserved_gib (torch.cuda memory_stats
//                "reserved_bytes.all.peak", reset after each line); logged at
//                step 1 and every log_freq steps (should_log). ANSI colours
//                are stripped; "validate step:" lines are not training steps.
//   megatron     Megatron-LM's megatron/training/training.py (training_log):
//                " iteration      100/    1000 | ... | elapsed time per iteration
//                (ms): 1234.5 | throughput per GPU (TFLOP/s/GPU): 412.3 | ...",
//                logged at the first iteration and every log_interval; and
//                megatron/training/utils/common_utils.py (report_memory):
//                "[Rank 0] (after 10 iterations) memory (MB) | allocated: ... |
//                max allocated: ... | reserved: ... | max reserved: ...", MB
//                being 2^20 bytes.
//   hf_trainer_state  a Hugging Face Trainer's trainer_state.json
//                (TrainerState.save_to_json): the log_history entry that
//                Trainer._inner_training_loop logs at the end of training from
//                trainer_utils.speed_metrics("train", start_time,
//                num_samples = max_steps x total_train_batch_size, num_steps =
//                state.max_steps): train_runtime (seconds), train_samples_per_second.
//   kineto       a PyTorch profiler trace (Chrome trace JSON written by
//                libkineto's ChromeTraceLogger, output_json.cpp): the complete
//                events ("ph": "X", "ts" and "dur" in microseconds) named
//                "ProfilerStep#N" that torch.profiler.profile.step() records
//                around each step (record_function("ProfilerStep#" +
//                str(step_num)), category "user_annotation" on the host; the
//                GPU's "gpu_user_annotation" copy when the host's is absent).
//
// Steady state: a step time is the median over the entries that cover none
// of the run's first kWarmupSteps steps (the first step compiles, autotunes
// and allocates; torchtitan and Megatron-LM print it on its own for that
// reason). An interval log's entry at step s covers the steps after the
// previous entry up to s; a profiler step N (counted from 0) is the run's
// step N + 1. Peak memory is the largest any kept entry reports (Megatron's
// is cumulative: the largest reported). A trainer_state.json has one
// whole-run average, warm-up included, and no memory; the basis says so.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ridgeline/spec/runs.hpp"

namespace ridgeline::spec {

/// The run's first steps a steady-state median leaves out.
inline constexpr int kWarmupSteps = 3;

/// The format of a log or trace from its text: JSON with "traceEvents"
/// (kineto) or "log_history" (hf_trainer_state); text with "elapsed time per
/// iteration (ms)" (megatron) or "step:" and "tps:" on one line
/// (torchtitan). nullopt when none fits.
std::optional<LogFormat> detect_log_format(std::string_view text);

/// Reads the run's measurement from a log (format detected when nullopt).
/// A log with no steady-state entry, a format that cannot be told, or a
/// malformed JSON file throws support::SpecError located in the log.
RunMeasurement read_run_log(const std::string& path, std::optional<LogFormat> format);

}  // namespace ridgeline::spec
