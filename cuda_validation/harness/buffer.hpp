// Owning device allocation. Running out of device memory is not an error of
// the suite: the constructor throws Skip ("out of memory"), so a 4 GiB HBM
// case on a smaller GPU is skipped and the suite goes on.
#pragma once

#include "harness/check.hpp"

#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>

namespace ridgeline::cuda_bench {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    cudaError_t status = cudaMalloc(&ptr_, bytes);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky: clear it and skip the case
      ptr_ = nullptr;
      char reason[96];
      std::snprintf(reason, sizeof reason, "out of device memory allocating %.1f MiB",
                    static_cast<double>(bytes) / (1024.0 * 1024.0));
      throw Skip(reason);
    }
    RIDGELINE_CUDA_CHECK(status);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      ptr_ = std::exchange(other.ptr_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }

  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void release() noexcept {
    if (ptr_ != nullptr) (void)cudaFree(ptr_);  // unchecked: may run while unwinding
    ptr_ = nullptr;
  }

  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace ridgeline::cuda_bench
