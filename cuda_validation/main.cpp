// ridgeline_cuda_bench: runs the CUDA microbenchmark suite and writes a
// measurement file (schema "ridgeline.measurements/1", docs/measurements.md).
//
//   ridgeline_cuda_bench [--quick] [--device N] [--only CLASS[,CLASS...]] --output FILE
//
// Sets CUDA_MODULE_LOADING=EAGER before the first CUDA call, so every kernel
// is loaded at start-up and no case's first run pays a lazy module load.
//
// Exit status: 0 every case ran or was skipped with a reason; 2 bad
// arguments, no CUDA device, or an output path that cannot be written; 3 a
// case failed with a CUDA error, or SIGTERM / SIGINT stopped the run (after
// the case in progress). After a failed case the suite goes on when the
// device is still usable, and stops when it is not. The file is rewritten
// after every record, so however the run ends it holds every record measured.

#include "benches/benches.hpp"
#include "harness/check.hpp"
#include "harness/device_info.hpp"
#include "harness/measurement_file.hpp"
#include "harness/suite.hpp"
#include "ridgeline/spec/measurement_class.hpp"
#include "ridgeline/support/utc_time.hpp"

#include <cuda_runtime_api.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#ifndef RIDGELINE_VERSION
#define RIDGELINE_VERSION "0.1.0"
#endif

namespace rcb = ridgeline::cuda_bench;
using ridgeline::spec::MeasurementClass;

namespace {

struct Bench {
  const char* name;
  std::vector<MeasurementClass> classes;
  void (*run)(rcb::Suite&);
};

/// In the order they run: what calibration fits most first (launch, HBM, GEMM),
/// so that a run cut short by a time limit keeps what matters most.
const std::vector<Bench>& benches() {
  static const std::vector<Bench> kBenches = {
      {"launch", {MeasurementClass::kLaunch, MeasurementClass::kLaunchHost, MeasurementClass::kLaunchGraph},
       rcb::run_launch},
      {"hbm",
       {MeasurementClass::kHbmCopy, MeasurementClass::kHbmTriad, MeasurementClass::kL2Copy, MeasurementClass::kL2Triad},
       rcb::run_hbm},
      {"gemm", {MeasurementClass::kGemm}, rcb::run_gemm},
      {"elementwise", {MeasurementClass::kElementwiseUnfused, MeasurementClass::kElementwiseFused},
       rcb::run_elementwise},
      {"softmax", {MeasurementClass::kSoftmax}, rcb::run_softmax},
      {"layernorm", {MeasurementClass::kLayernorm}, rcb::run_layernorm},
      {"attention", {MeasurementClass::kAttentionNaive, MeasurementClass::kAttentionCudaCore}, rcb::run_attention},
      {"sram", {MeasurementClass::kSram}, rcb::run_sram},
  };
  return kBenches;
}

constexpr const char* kUsage =
    "usage: ridgeline_cuda_bench [--quick] [--device N] [--only CLASS[,CLASS...]] --output FILE\n"
    "       ridgeline_cuda_bench --list\n"
    "  --quick         fewer sizes and samples (under 3 minutes on an H100)\n"
    "  --device N      CUDA device ordinal to measure (default 0)\n"
    "  --only LIST     run only these benchmarks or measurement classes, comma-separated\n"
    "  --output FILE   measurement file to write (JSON, schema ridgeline.measurements/1)\n"
    "  --list          print the benchmarks and the classes they measure\n";

struct Options {
  bool quick = false;
  int device = 0;
  bool list = false;
  std::string output;
  std::vector<std::string> only;
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

bool parse_args(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ridgeline_cuda_bench: %s needs a value\n", flag);
        return nullptr;
      }
      return argv[++i];
    };
    if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--device" || arg.rfind("--device=", 0) == 0) {
      const char* v = arg == "--device" ? next("--device") : argv[i] + 9;
      if (v == nullptr) return false;
      char* end = nullptr;
      errno = 0;
      long n = std::strtol(v, &end, 10);
      if (*v == '\0' || *end != '\0' || errno != 0 || n < 0 || n > 1023) {
        std::fprintf(stderr, "ridgeline_cuda_bench: --device: expected a device ordinal such as 0, got '%s'\n", v);
        return false;
      }
      options.device = static_cast<int>(n);
    } else if (arg == "--list") {
      options.list = true;
    } else if (arg == "--output" || arg == "-o") {
      const char* v = next("--output");
      if (v == nullptr) return false;
      options.output = v;
    } else if (arg.rfind("--output=", 0) == 0) {
      options.output = arg.substr(9);
    } else if (arg == "--only") {
      const char* v = next("--only");
      if (v == nullptr) return false;
      for (auto& item : split_commas(v)) options.only.push_back(item);
    } else if (arg.rfind("--only=", 0) == 0) {
      for (auto& item : split_commas(arg.substr(7))) options.only.push_back(item);
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else {
      std::fprintf(stderr, "ridgeline_cuda_bench: unknown argument '%s'\n", arg.c_str());
      return false;
    }
  }
  if (!options.list && options.output.empty()) {
    std::fprintf(stderr, "ridgeline_cuda_bench: --output FILE is required\n");
    return false;
  }
  return true;
}

/// Resolves --only items (benchmark names or class names) into the benchmarks to
/// run and the classes to keep; false (with a message) on an unknown item.
bool resolve_only(const std::vector<std::string>& only, std::vector<const Bench*>& run,
                  std::vector<MeasurementClass>& classes) {
  for (const Bench& b : benches()) {
    bool selected = only.empty();
    for (const std::string& item : only) {
      if (item == b.name) {
        selected = true;
        classes.insert(classes.end(), b.classes.begin(), b.classes.end());
      }
      for (MeasurementClass c : b.classes) {
        if (ridgeline::spec::parse_measurement_class(item) == c) {
          selected = true;
          classes.push_back(c);
        }
      }
    }
    if (selected) run.push_back(&b);
  }
  for (const std::string& item : only) {
    bool known = false;
    for (const Bench& b : benches()) {
      known = known || item == b.name;
      for (MeasurementClass c : b.classes) known = known || ridgeline::spec::parse_measurement_class(item) == c;
    }
    if (!known) {
      std::string names;
      for (const Bench& b : benches()) {
        names += names.empty() ? "" : ", ";
        names += b.name;
      }
      std::fprintf(stderr, "ridgeline_cuda_bench: --only: unknown benchmark or class '%s' (benchmarks: %s)\n",
                   item.c_str(), names.c_str());
      return false;
    }
  }
  return true;
}

extern "C" void on_stop_signal(int) { rcb::request_stop(); }

/// Before spending minutes measuring: can a file be created next to the output?
bool output_writable(const std::string& path) {
  std::string tmp = rcb::temp_path(path);
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    std::fprintf(stderr, "ridgeline_cuda_bench: cannot write next to %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  std::fclose(f);
  std::remove(tmp.c_str());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any CUDA call: the runtime reads it when it initialises.
  setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  Options options;
  if (!parse_args(argc, argv, options)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::vector<const Bench*> selected;
  std::vector<MeasurementClass> classes;
  if (!resolve_only(options.only, selected, classes)) return 2;
  if (options.list) {
    for (const Bench& b : benches()) {
      std::string cls;
      for (MeasurementClass c : b.classes) {
        if (!cls.empty()) cls += ", ";
        cls += ridgeline::spec::name(c);
      }
      std::printf("%-12s %s\n", b.name, cls.c_str());
    }
    return 0;
  }

  int device_count = 0;
  cudaError_t status = cudaGetDeviceCount(&device_count);
  if (status != cudaSuccess || device_count == 0) {
    std::fprintf(stderr, "ridgeline_cuda_bench: no CUDA device found\n");
    if (status != cudaSuccess && status != cudaErrorNoDevice)
      std::fprintf(stderr, "  (cudaGetDeviceCount: %s: %s)\n", cudaGetErrorName(status), cudaGetErrorString(status));
    return 2;
  }
  if (options.device >= device_count) {
    std::fprintf(stderr, "ridgeline_cuda_bench: --device %d: this machine has %d CUDA device%s (0 to %d)\n",
                 options.device, device_count, device_count == 1 ? "" : "s", device_count - 1);
    return 2;
  }
  if (!output_writable(options.output)) return 2;

  std::string date = ridgeline::support::utc_now_iso8601();
  std::vector<rcb::Record> records;
  rcb::DeviceInfo device;
  int failed = 0, skipped = 0, check_failures = 0;
  bool lost = false, stopped = false;
  // A time limit's SIGTERM (or ^C) ends the run after the current case; the
  // file is rewritten after every record, so even a SIGKILL loses at most one.
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGINT, on_stop_signal);
  try {
    RIDGELINE_CUDA_CHECK(cudaSetDevice(options.device));
    device = rcb::query_device(options.device);
    std::fprintf(stderr, "ridgeline_cuda_bench %s: %s%s\n", RIDGELINE_VERSION, rcb::describe(device).c_str(),
                 options.quick ? " [quick]" : "");
    rcb::Suite suite(device, options.quick);
    suite.set_class_filter(classes);
    suite.set_on_record([&](const std::vector<rcb::Record>& so_far) {
      try {
        (void)rcb::write_atomically(options.output,
                                    rcb::measurements_json(device, options.quick, date, RIDGELINE_VERSION, so_far));
      } catch (const std::exception&) {
        // The final write below reports a failure.
      }
    });
    for (const Bench* b : selected) {
      suite.progress(std::string("== ") + b->name);
      try {
        b->run(suite);
      } catch (const rcb::Skip& e) {
        suite.skip(b->name, e.what());
      } catch (const rcb::DeviceLost& e) {
        suite.progress(std::string("stopping: ") + e.what());
        lost = true;
        break;
      } catch (const rcb::Stopped& e) {
        suite.progress(std::string("stopping: ") + e.what());
        stopped = true;
        break;
      } catch (const rcb::CudaError& e) {
        // A failure outside any case (the benchmark's own setup).
        suite.progress(std::string("FAILED benchmark ") + b->name + ": " + e.what());
        ++failed;
        (void)cudaGetLastError();
        if (cudaDeviceSynchronize() != cudaSuccess) {
          suite.progress("stopping: the device is unusable");
          lost = true;
          break;
        }
      }
    }
    records = suite.records();
    failed += suite.failed();
    skipped = suite.skipped();
    check_failures = suite.check_failures();
  } catch (const rcb::CudaError& e) {
    std::fprintf(stderr, "ridgeline_cuda_bench: setup failed: %s\n", e.what());
    return 3;
  }

  std::string text;
  try {
    text = rcb::measurements_json(device, options.quick, date, RIDGELINE_VERSION, records);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ridgeline_cuda_bench: internal error writing JSON: %s\n", e.what());
    return 3;
  }
  if (!rcb::write_atomically(options.output, text)) return 3;
  std::fprintf(stderr, "ridgeline_cuda_bench: wrote %zu records to %s (%d skipped, %d failed, %d failed their check)\n",
               records.size(), options.output.c_str(), skipped, failed, check_failures);
  if (lost || stopped)
    std::fprintf(stderr,
                 "ridgeline_cuda_bench: the suite stopped early%s; the file holds the records measured before\n",
                 stopped ? " (stop requested)" : "");
  return failed > 0 || lost || stopped ? 3 : 0;
}
