#pragma once
// Errors as values. Libraries never print or exit: they return Result<T>, which holds either
// a value or every problem found (one run reports every problem of a file).

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "stepsim/base/assert.hpp"

namespace stepsim {

/// What kind of failure an Error reports; the exit status follows from it (exit_status).
enum class ErrorKind : std::uint8_t {
  kInput,     ///< bad input: a file, key or option breaks a rule (exit 2)
  kRuntime,   ///< the environment failed: a file cannot be written, a device is missing (exit 1)
  kInternal,  ///< a bug: an invariant broke, e.g. a non-finite prediction (exit 1)
};

/// One problem with an input: which file, which key (dotted path, e.g.
/// "training.tensor_model_parallel_size") and what rule it breaks. `message` is the full
/// sentence after the key, in Megatron's vocabulary.
struct Error {
  std::string file;     ///< file the problem is in; empty for command-line input
  std::string key;      ///< dotted key path; empty when the whole file is at fault
  std::string message;  ///< e.g. "=6 does not divide num_attention_heads=96"
  ErrorKind kind = ErrorKind::kInput;

  /// "file: key=... message" as printed to the user, one line.
  std::string to_string() const;
  bool operator==(const Error&) const = default;
};

using Errors = std::vector<Error>;

/// Either a T or a non-empty list of errors.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : state_(Errors{std::move(error)}) {}  // NOLINT
  Result(Errors errors) : state_(std::move(errors)) {        // NOLINT
    STEPSIM_ASSERT(!std::get<Errors>(state_).empty());
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  const T& value() const& {
    STEPSIM_ASSERT(ok());
    return std::get<T>(state_);
  }
  T& value() & {
    STEPSIM_ASSERT(ok());
    return std::get<T>(state_);
  }
  T&& value() && {
    STEPSIM_ASSERT(ok());
    return std::get<T>(std::move(state_));
  }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }

  const Errors& errors() const {
    STEPSIM_ASSERT(!ok());
    return std::get<Errors>(state_);
  }

 private:
  std::variant<T, Errors> state_;
};

/// For functions that return nothing but may fail.
using Status = Result<std::monostate>;
/// The success value of a Status: `return ok_status();`.
inline Status ok_status() { return std::monostate{}; }

/// Joins errors as the CLI prints them: one line each.
std::string format_errors(const Errors& errors);

/// The one mapping of error kinds to exit statuses: 2 when every error is bad input, else 1
/// (a runtime failure or an internal error outranks the input's problems).
int exit_status(const Errors& errors);

}  // namespace stepsim
