// The README's GPT-3 175B search as a user runs it: the whole `ridgeline
// search` process (start-up, reading the profiles, frameworks and residuals,
// the search, the intervals and the table), wall clock per run. The target is
// under 50 ms on the 2-core development machine.
#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

extern char** environ;

namespace {

int run_quietly(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int e = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (e != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Runs `args` once per benchmark iteration; stops with an error when it
/// exits with other than `expected`.
void time_command(benchmark::State& state, std::vector<std::string> args, int expected = 0) {
  for (auto _ : state) {
    if (run_quietly(args) != expected) {
      state.SkipWithError(("ridgeline " + args[1] + " did not exit " + std::to_string(expected)).c_str());
      break;
    }
  }
}

void BM_Cli_Search175B_1024xA100(benchmark::State& state) {
  time_command(state, {RIDGELINE_BINARY, "search", "--gpu", "a100_sxm_80gb", "--model", "gpt3_175b", "--gpus", "1024",
                       "--global-batch", "1536", "--seq", "2048", "--top", "5"});
}
BENCHMARK(BM_Cli_Search175B_1024xA100)->Unit(benchmark::kMillisecond)->UseRealTime();

// `ridgeline predict` with the shipped default plan (Llama-3-8B on one H100,
// which does not fit: exit 1) and a plan that fits (the README's first
// example, 8 H100s), as a user runs them: the whole process, start-up,
// the GPU, model and framework profiles, the residuals behind the intervals,
// one evaluation and the table. The target is under 5 ms on the 2-core
// development machine.
void BM_Cli_PredictDefault(benchmark::State& state) { time_command(state, {RIDGELINE_BINARY, "predict"}, 1); }
BENCHMARK(BM_Cli_PredictDefault)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Cli_PredictFits8xH100(benchmark::State& state) {
  time_command(state, {RIDGELINE_BINARY, "predict", "--gpu", "h100_sxm", "--model", "llama3_8b", "--seq", "8192",
                       "--global-batch", "64", "--tp", "1", "--pp", "1", "--dp", "8", "--zero", "2"});
}
BENCHMARK(BM_Cli_PredictFits8xH100)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same search ten times wider and more: also over the framework
// (deepspeed, fsdp, hf, megatron, torchtitan), TP communication overlap
// and CPU offload (none, optimizer, optimizer + parameters): 1,555,200
// layouts enumerated, 30x the 51,840 above. The target is under 100 ms.
void BM_Cli_SearchWide175B_1024xA100(benchmark::State& state) {
  time_command(state, {RIDGELINE_BINARY, "search", "--gpu", "a100_sxm_80gb", "--model", "gpt3_175b", "--gpus", "1024",
                       "--global-batch", "1536", "--seq", "2048", "--top", "5", "--search",
                       "tp,pp,dp,cp,mb,vpp,zero,recompute,framework,tp_overlap,offload"});
}
BENCHMARK(BM_Cli_SearchWide175B_1024xA100)->Unit(benchmark::kMillisecond)->UseRealTime();

// `ridgeline advise` on Llama-3-70B at TP8 PP4 DP16 on 512 H100s (issue 17:
// under 100 ms through the CLI): the plan and every change, each through the engine.
void BM_Cli_Advise70B_512xH100(benchmark::State& state) {
  time_command(state, {RIDGELINE_BINARY, "advise", "--gpu", "h100_sxm", "--model", "llama3_70b", "--tp", "8", "--pp",
                       "4", "--dp", "16", "--global-batch", "2048", "--seq", "8192"});
}
BENCHMARK(BM_Cli_Advise70B_512xH100)->Unit(benchmark::kMillisecond)->UseRealTime();

// "What should I rent?" (issue 38): Llama-3-70B on 2T tokens within 30
// days at the least cost, over every shipped GPU profile with a price and
// every count --deadline tries up to 16,384 (one search per GPU kind and
// count; counts too few to finish even at 100% MFU of the GPU's highest
// peak are skipped). The target is under one second on the 2-core
// development machine.
void BM_Cli_SearchRentAllGpus70B(benchmark::State& state) {
  time_command(state, {RIDGELINE_BINARY, "search", "--gpu", "all", "--model", "llama3_70b", "--global-batch", "4M",
                       "--tokens", "2T", "--deadline", "30d", "--objective", "cost", "--max-gpus", "16384"});
}
BENCHMARK(BM_Cli_SearchRentAllGpus70B)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
