// Small helpers over the SQLite C API, private to src/store.
//
// Stmt owns one prepared statement and finalizes it. ScopedReset resets a
// statement (and clears its bindings) when it leaves scope, so a statement
// that failed half-way never keeps a read transaction or dangling text
// bindings alive. Text is bound with SQLITE_STATIC: the caller's string must
// outlive the step, which ScopedReset guarantees by clearing the binding.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <utility>

namespace allot::store::sqlite {

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(Stmt&& other) noexcept : stmt_(std::exchange(other.stmt_, nullptr)) {}
  Stmt& operator=(Stmt&& other) noexcept {
    if (this != &other) {
      sqlite3_finalize(stmt_);
      stmt_ = std::exchange(other.stmt_, nullptr);
    }
    return *this;
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  sqlite3_stmt* get() const { return stmt_; }
  explicit operator bool() const { return stmt_ != nullptr; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

class ScopedReset {
 public:
  explicit ScopedReset(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~ScopedReset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  ScopedReset(const ScopedReset&) = delete;
  ScopedReset& operator=(const ScopedReset&) = delete;

 private:
  sqlite3_stmt* stmt_;
};

// Binds `text` without copying it (see the file comment).
inline int BindText(sqlite3_stmt* stmt, int index, const std::string& text) {
  return sqlite3_bind_text64(stmt, index, text.data(), text.size(),
                             SQLITE_STATIC, SQLITE_UTF8);
}

inline int BindInt(sqlite3_stmt* stmt, int index, int64_t value) {
  return sqlite3_bind_int64(stmt, index, value);
}

// The text of column `col`, embedded NULs included; "" for NULL.
inline std::string ColumnText(sqlite3_stmt* stmt, int col) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, col));
  if (p == nullptr) return std::string();
  return std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt, col)));
}

inline int64_t ColumnInt(sqlite3_stmt* stmt, int col) {
  return sqlite3_column_int64(stmt, col);
}

}  // namespace allot::store::sqlite
