// Status and Result<T>: errors cross module boundaries as values.
//
// A Status is OK or carries a code, a message a user can act on, and
// optionally the field (a dotted path such as "spec.resourceGroups[0]") that
// the error is about. Result<T> holds either a T or a non-OK Status.
// Neither type throws; reading the value of a failed Result is a bug and
// aborts.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace allot {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kPermissionDenied,
  kUnauthenticated,
  kInternal,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg, std::string field = "") {
    return Status(StatusCode::kInvalidArgument, std::move(msg),
                  std::move(field));
  }
  static Status NotFound(std::string msg, std::string field = "") {
    return Status(StatusCode::kNotFound, std::move(msg), std::move(field));
  }
  static Status AlreadyExists(std::string msg, std::string field = "") {
    return Status(StatusCode::kAlreadyExists, std::move(msg), std::move(field));
  }
  static Status FailedPrecondition(std::string msg, std::string field = "") {
    return Status(StatusCode::kFailedPrecondition, std::move(msg),
                  std::move(field));
  }
  static Status PermissionDenied(std::string msg, std::string field = "") {
    return Status(StatusCode::kPermissionDenied, std::move(msg), std::move(field));
  }
  static Status Unauthenticated(std::string msg) {
    return Status(StatusCode::kUnauthenticated, std::move(msg), "");
  }
  static Status Internal(std::string msg) {
    return Status(StatusCode::kInternal, std::move(msg), "");
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& field() const { return field_; }

  // Returns a copy whose field is `prefix` + "." + field (or just `prefix`).
  Status WithFieldPrefix(const std::string& prefix) const {
    Status s = *this;
    if (s.field_.empty()) {
      s.field_ = prefix;
    } else if (!prefix.empty()) {
      s.field_ =
          s.field_[0] == '[' ? prefix + s.field_ : prefix + "." + s.field_;
    }
    return s;
  }

  // "field: message" or just the message.
  std::string ToString() const {
    if (ok()) return "OK";
    return field_.empty() ? message_ : field_ + ": " + message_;
  }

 private:
  Status(StatusCode code, std::string msg, std::string field)
      : code_(code), message_(std::move(msg)), field_(std::move(field)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string field_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design.
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).ok()) {
      std::fprintf(stderr, "Result constructed from an OK Status\n");
      std::abort();
    }
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return Get(); }
  const T& value() const& { return const_cast<Result*>(this)->Get(); }
  T&& value() && { return std::move(Get()); }
  T* operator->() { return &Get(); }
  const T* operator->() const { return &const_cast<Result*>(this)->Get(); }
  T& operator*() & { return Get(); }
  const T& operator*() const& { return const_cast<Result*>(this)->Get(); }

 private:
  T& Get() {
    if (!ok()) {
      std::fprintf(stderr, "value() of failed Result: %s\n",
                   std::get<Status>(v_).ToString().c_str());
      std::abort();
    }
    return std::get<T>(v_);
  }
  std::variant<T, Status> v_;
};

#define ALLOT_RETURN_IF_ERROR(expr) \
  do {                              \
    ::allot::Status _st = (expr);   \
    if (!_st.ok()) return _st;      \
  } while (0)

// CHECK for programmer errors (never for user input): aborts with a message.
#define ALLOT_CHECK(cond)                                                   \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

}  // namespace allot
