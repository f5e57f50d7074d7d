// Status and Result<T>: how murmur reports expected failures.
//
// Anything that comes from the network, a file or a user can be wrong, so the
// functions that read it return a Status (or a Result<T> holding either a value
// or a non-OK Status) instead of throwing or aborting. Messages name the thing
// and, where one applies, the limit: "frame length 9663676416 over limit 67108864".
// A broken invariant of murmur's own code is a bug instead: see core/check.h.
//
// Thread-safety: values; safe to copy and move between threads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "core/check.h"

namespace murmur {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the caller's input is malformed or out of range
  kNotFound,            // a named file, peer or key does not exist
  kAlreadyExists,       // creating something that is there already
  kOutOfRange,          // a read past the end, an index past a bound
  kFailedPrecondition,  // the system is not in a state that allows this
  kResourceExhausted,   // a size, rate or memory limit was hit
  kPermissionDenied,    // authenticated, but not allowed
  kUnauthenticated,     // identity or signature could not be verified
  kDataLoss,            // a file or frame is truncated or corrupt
  kUnavailable,         // a peer or service cannot be reached now; retry may help
  kDeadlineExceeded,    // a timeout expired
  kAborted,             // the operation was abandoned (e.g. a round aborted)
  kInternal,            // an unexpected failure of a library we call
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) { return {StatusCode::kAlreadyExists, std::move(msg)}; }
  static Status OutOfRange(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
  static Status FailedPrecondition(std::string msg) {
    return {StatusCode::kFailedPrecondition, std::move(msg)};
  }
  static Status ResourceExhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
  }
  static Status PermissionDenied(std::string msg) { return {StatusCode::kPermissionDenied, std::move(msg)}; }
  static Status Unauthenticated(std::string msg) { return {StatusCode::kUnauthenticated, std::move(msg)}; }
  static Status DataLoss(std::string msg) { return {StatusCode::kDataLoss, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status DeadlineExceeded(std::string msg) { return {StatusCode::kDeadlineExceeded, std::move(msg)}; }
  static Status Aborted(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "InvalidArgument: frame length 9663676416 over limit 67108864", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>" (OK stays OK).
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {
    MURMUR_CHECK(code != StatusCode::kOk);
  }

  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Result<T>: a T, or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    MURMUR_CHECK_MSG(!status_.ok(), "Result built from an OK Status carries no value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok().
  T& value() & {
    MURMUR_CHECK_MSG(ok(), status_.ToString());
    return *value_;
  }
  const T& value() const& {
    MURMUR_CHECK_MSG(ok(), status_.ToString());
    return *value_;
  }
  T&& value() && {
    MURMUR_CHECK_MSG(ok(), status_.ToString());
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace murmur

#define MURMUR_STATUS_CONCAT_INNER(a, b) a##b
#define MURMUR_STATUS_CONCAT(a, b) MURMUR_STATUS_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define MURMUR_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::murmur::Status murmur_status_ = (expr);        \
    if (!murmur_status_.ok()) return murmur_status_; \
  } while (0)

// `lhs = value of expr`, or returns its Status from the enclosing function.
#define MURMUR_ASSIGN_OR_RETURN(lhs, expr) \
  MURMUR_ASSIGN_OR_RETURN_IMPL(MURMUR_STATUS_CONCAT(murmur_result_, __LINE__), lhs, expr)
#define MURMUR_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
