// A published row Ridgeline cannot predict is data, not an error: each step
// of the mapping returns its value or the reason it cannot go on (an unknown
// GPU, a missing field, a quantity the model has no term for, an unsupported
// technique), in words that group well in a table of skip reasons.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace ridgeline::validation {

/// Why a row is skipped.
struct Skip {
  std::string reason;
};

/// A value, or the Skip that stopped it.
template <class T>
class OrSkip {
 public:
  OrSkip(T value) : value_(std::move(value)) {}  // NOLINT: implicit, like std::optional
  OrSkip(Skip skip) : reason_(std::move(skip.reason)) {}  // NOLINT

  explicit operator bool() const { return value_.has_value(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  /// The reason, when there is no value.
  const std::string& reason() const { return reason_; }
  Skip skip() const { return Skip{reason_}; }

 private:
  std::optional<T> value_;
  std::string reason_;
};

}  // namespace ridgeline::validation
