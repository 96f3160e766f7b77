// Kernel launch overhead, three ways (empty kernels of 1 block x 1 thread),
// three classes:
//   launch_host_empty_x1000    (launch_host) 1000 launches back to back, timed
//                              from an event before the first to one after the
//                              last, no stream gate: host launch path and GPU
//                              together (the host is the bound for a stream of
//                              tiny kernels issued by one thread);
//   launch_empty_queued_x256   (launch) 256 launches enqueued behind the stream
//                              gate and then released: the GPU-side gap per
//                              queued kernel, what the engine's launch_overhead
//                              is (256 stays well inside the launch queue);
//   launch_graph_empty_x1000   (launch_graph) 1000 kernels captured once into a
//                              CUDA graph, one graph launch per sample.
// launches = the kernels in one sample, median_s = time for all of them (per
// launch = median_s / launches); flops = bytes = 0. Never batched: each
// sample is already hundreds of launches.

#include "benches/bench_util.cuh"
#include "benches/benches.hpp"

#include <string>

namespace ridgeline::cuda_bench {

namespace {

constexpr int kLaunches = 1000;
constexpr int kQueuedLaunches = 256;

TimingOptions launch_options(const Suite& suite) {
  TimingOptions options = suite.default_options();
  options.flush_l2 = false;
  options.hold_stream = false;  // the host's launch time is the measurement
  options.warmup = 1;
  options.batch_short = false;
  return options;
}

Record launch_record(const std::string& name, spec::MeasurementClass cls, int launches) {
  Record r;
  r.name = name;
  r.cls = cls;
  r.dtype = "fp32";  // no data; the schema wants a dtype
  r.launches = launches;
  return r;
}

void stream_case(Suite& suite) {
  const std::string name = "launch_host_empty_x" + std::to_string(kLaunches);
  suite.run_case(name, [&] {
    auto run = [](cudaStream_t stream) {
      for (int i = 0; i < kLaunches; ++i) launch_empty(stream);
      RIDGELINE_CUDA_CHECK_LAUNCH();
    };
    Timing timing = suite.time(run, launch_options(suite));
    Record r = launch_record(name, spec::MeasurementClass::kLaunchHost, kLaunches);
    r.algorithm = "stream, host launch included, <<<1,1>>> empty kernel";
    suite.add(r, timing);
  });
}

void queued_case(Suite& suite) {
  const std::string name = "launch_empty_queued_x" + std::to_string(kQueuedLaunches);
  suite.run_case(name, [&] {
    auto run = [](cudaStream_t stream) {
      for (int i = 0; i < kQueuedLaunches; ++i) launch_empty(stream);
      RIDGELINE_CUDA_CHECK_LAUNCH();
    };
    TimingOptions options = launch_options(suite);
    options.hold_stream = true;  // all launches wait in the queue; the GPU-side gap is timed
    Timing timing = suite.time(run, options);
    Record r = launch_record(name, spec::MeasurementClass::kLaunch, kQueuedLaunches);
    r.algorithm = "stream, queued behind the gate (GPU-side), <<<1,1>>> empty kernel";
    suite.add(r, timing);
  });
}

void graph_case(Suite& suite) {
  const std::string name = "launch_graph_empty_x" + std::to_string(kLaunches);
  suite.run_case(name, [&] {
    cudaStream_t stream = suite.stream();
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    RIDGELINE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kLaunches; ++i) launch_empty(stream);
    cudaError_t launch_status = cudaGetLastError();
    RIDGELINE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    RIDGELINE_CUDA_CHECK(launch_status);
    struct Cleanup {
      cudaGraph_t& graph;
      cudaGraphExec_t& exec;
      ~Cleanup() {
        if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
        if (graph != nullptr) (void)cudaGraphDestroy(graph);
      }
    } cleanup{graph, exec};
    RIDGELINE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    RIDGELINE_CUDA_CHECK(cudaGraphUpload(exec, stream));

    auto run = [&](cudaStream_t s) { RIDGELINE_CUDA_CHECK(cudaGraphLaunch(exec, s)); };
    Timing timing = suite.time(run, launch_options(suite));
    Record r = launch_record(name, spec::MeasurementClass::kLaunchGraph, kLaunches);
    r.algorithm = "one CUDA graph of " + std::to_string(kLaunches) + " empty kernel nodes";
    suite.add(r, timing);
  });
}

}  // namespace

void run_launch(Suite& suite) {
  if (suite.wants(spec::MeasurementClass::kLaunchHost)) stream_case(suite);
  if (suite.wants(spec::MeasurementClass::kLaunch)) queued_case(suite);
  if (suite.wants(spec::MeasurementClass::kLaunchGraph)) graph_case(suite);
}

}  // namespace ridgeline::cuda_bench
