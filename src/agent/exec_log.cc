// Reading pod logs as ProcessExecutor writes them (exec.h): TailFile, the
// last lines of a log for a failed pod's message, and ReadLog, a piece of
// a log (following it across a rotation to path.1) for `allot logs`. Both
// hand out valid UTF-8, since what they read goes into JSON. Stateless and
// thread-safe: each call opens the file, reads with pread, and closes it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "agent/exec.h"

namespace allot::agent {

namespace {

// Reads [offset, offset + limit) of `path`; false when it cannot be opened.
bool ReadRange(const std::string& path, int64_t offset, int64_t limit,
               int64_t* size, std::string* out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  *size = fstat(fd, &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
  out->clear();
  if (offset >= 0 && offset < *size) {
    out->resize(static_cast<size_t>(std::min(limit, *size - offset)));
    ssize_t n = pread(fd, out->data(), out->size(), static_cast<off_t>(offset));
    out->resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  close(fd);
  return true;
}

// The length of the UTF-8 sequence that starts with `c`; 0 if none does.
int Utf8Length(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

// Makes `data` valid UTF-8 in place: invalid bytes become '?'. Returns how
// many bytes at the end are the start of a character cut off there.
size_t SanitizeUtf8(std::string* data) {
  std::string& d = *data;
  size_t i = 0;
  while (i < d.size()) {
    const int len = Utf8Length(static_cast<unsigned char>(d[i]));
    if (len == 0) {
      d[i++] = '?';
      continue;
    }
    if (i + static_cast<size_t>(len) > d.size()) {
      bool prefix = true;  // Valid so far: perhaps cut by the limit.
      for (size_t j = i + 1; j < d.size(); ++j) {
        if ((static_cast<unsigned char>(d[j]) & 0xC0) != 0x80) prefix = false;
      }
      if (prefix) return d.size() - i;
      d[i++] = '?';
      continue;
    }
    bool ok = true;
    for (int j = 1; j < len; ++j) {
      if ((static_cast<unsigned char>(d[i + j]) & 0xC0) != 0x80) ok = false;
    }
    // Overlong 3- and 4-byte forms, surrogates and code points past U+10FFFF.
    const unsigned char c0 = static_cast<unsigned char>(d[i]);
    const unsigned char c1 = len > 1 ? static_cast<unsigned char>(d[i + 1]) : 0;
    if ((c0 == 0xE0 && c1 < 0xA0) || (c0 == 0xED && c1 > 0x9F) ||
        (c0 == 0xF0 && c1 < 0x90) || (c0 == 0xF4 && c1 > 0x8F)) {
      ok = false;
    }
    if (!ok) {
      d[i++] = '?';
      continue;
    }
    i += static_cast<size_t>(len);
  }
  return 0;
}

}  // namespace

std::string TailFile(const std::string& path, int max_lines, size_t max_bytes) {
  if (max_lines <= 0 || max_bytes == 0) return "";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st;
  std::string data;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    size_t size = static_cast<size_t>(st.st_size);
    size_t want = std::min(size, max_bytes);
    data.resize(want);
    ssize_t n = pread(fd, data.data(), want, static_cast<off_t>(size - want));
    data.resize(n > 0 ? static_cast<size_t>(n) : 0);
    // Started mid-file: drop the partial first line if a whole one follows.
    if (want < size) {
      size_t nl = data.find('\n');
      if (nl != std::string::npos && nl + 1 < data.size())
        data.erase(0, nl + 1);
    }
  }
  close(fd);
  // Keep the last max_lines lines (a final '\n' does not start a line).
  size_t end = data.size();
  if (end > 0 && data[end - 1] == '\n') --end;
  size_t start = end;
  int lines = 0;
  while (start > 0) {
    if (data[start - 1] == '\n' && ++lines == max_lines) break;
    --start;
  }
  data = data.substr(start, end - start);
  data.resize(data.size() - SanitizeUtf8(&data));  // It goes into JSON.
  return data;
}

LogChunk ReadLog(const std::string& path, int64_t offset, int64_t limit) {
  LogChunk c;
  limit = std::max<int64_t>(1, limit);
  int64_t size = 0;
  std::string probe;
  if (!ReadRange(path, 0, 0, &size, &probe)) return c;
  c.exists = true;
  if (offset < 0) offset = std::max<int64_t>(0, size - limit);
  if (offset > size) {
    // Rotated since the last read: the rest of the previous file first.
    int64_t old_size = 0;
    if (ReadRange(path + ".1", offset, limit, &old_size, &c.data) &&
        offset < old_size) {
      c.offset = offset;
      const size_t cut = SanitizeUtf8(&c.data);
      c.data.resize(c.data.size() - cut);
      const int64_t end = offset + static_cast<int64_t>(c.data.size());
      c.next_offset = end >= old_size ? 0 : end;
      // The next read continues in .1 while it is not done: its offset is
      // past the new file's end unless the new file grew nearly to the
      // rotation size meanwhile (then the rest of .1 is skipped).
      return c;
    }
    offset = 0;
  }
  ReadRange(path, offset, limit, &size, &c.data);
  c.offset = offset;
  const size_t cut = SanitizeUtf8(&c.data);
  c.data.resize(c.data.size() - cut);
  c.next_offset = offset + static_cast<int64_t>(c.data.size());
  return c;
}

}  // namespace allot::agent
