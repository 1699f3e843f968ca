#include "server/audit.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "server/crypto.h"

namespace allot::server {
namespace {
void Field(std::string* out, const std::string& v) {
  *out += std::to_string(v.size());
  *out += ':';
  *out += v;
}

// "record 5 was" or "records 5 to 7 were".
std::string Records(int64_t from, int64_t to) {
  return from == to ? "record " + std::to_string(from) + " was"
                    : "records " + std::to_string(from) + " to " + std::to_string(to) + " were";
}
}  // namespace

std::string AuditHash(const store::AuditRow& row) {
  std::string s;
  Field(&s, row.prev_hash);
  Field(&s, std::to_string(row.seq));
  Field(&s, std::to_string(row.time_unix_ms));
  Field(&s, row.principal);
  Field(&s, row.tenant);
  Field(&s, row.verb);
  Field(&s, row.object);
  Field(&s, row.outcome);
  return Sha256Hex(s);
}

Status VerifyAuditChain(const std::vector<store::AuditRow>& rows,
                        std::optional<std::pair<int64_t, std::string>> head) {
  std::string prev = kAuditGenesis;
  int64_t want_seq = 1;
  for (const store::AuditRow& r : rows) {
    std::string at = "audit record " + std::to_string(r.seq);
    if (r.seq != want_seq) {
      return Status::FailedPrecondition(
          at + ": expected record " + std::to_string(want_seq) +
          " (records were deleted or inserted)");
    }
    if (r.prev_hash != prev) {
      return Status::FailedPrecondition(
          at + ": does not chain from the record before it");
    }
    if (AuditHash(r) != r.hash) {
      return Status::FailedPrecondition(at + ": its contents were edited");
    }
    prev = r.hash;
    ++want_seq;
  }
  if (head) {
    int64_t last = want_seq - 1;
    if (head->first != last || (last > 0 && head->second != prev)) {
      return Status::FailedPrecondition(
          "the log ends at record " + std::to_string(last) +
          " but the store's head says " + std::to_string(head->first) +
          " (records were deleted at the end)");
    }
  }
  return Status::Ok();
}

std::optional<AuditHead> ParseAuditHead(const std::string& s) {
  size_t colon = s.find(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  AuditHead h;
  for (size_t i = 0; i < colon; ++i) {
    if (s[i] < '0' || s[i] > '9' || h.seq > (INT64_MAX - 9) / 10) return std::nullopt;
    h.seq = h.seq * 10 + (s[i] - '0');
  }
  h.hash = s.substr(colon + 1);
  if (h.hash.size() != 64) return std::nullopt;
  return h;
}

std::optional<AuditHead> StoredAuditHead(const std::map<std::string, std::string>& meta) {
  auto it = meta.find("audit_head");
  if (it == meta.end()) return std::nullopt;
  return ParseAuditHead(it->second);
}

std::string AuditHeadFileFor(const std::string& store_url) {
  const std::string prefix = "sqlite:";
  if (store_url.rfind(prefix, 0) != 0 || store_url.size() == prefix.size()) return "";
  return store_url.substr(prefix.size()) + ".audit-head";
}

Result<std::optional<AuditHead>> ReadAuditHeadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<AuditHead>();
    return Status::Internal("cannot read the audit head file " + path + ": " +
                            std::strerror(errno));
  }
  char buf[128];
  ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  std::string text(buf, n > 0 ? size_t(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::optional<AuditHead> h = ParseAuditHead(text);
  if (!h) {
    return Status::FailedPrecondition("the audit head file " + path +
                                      " does not hold SEQ:HASH (it was edited)");
  }
  return h;
}

Status WriteAuditHeadFile(const std::string& path, const AuditHead& head) {
  const std::string tmp = path + ".tmp";
  const std::string text = std::to_string(head.seq) + ":" + head.hash + "\n";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::Internal("cannot write " + tmp + ": " + std::strerror(errno));
  }
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok) err = errno;
    return Status::Internal("cannot write the audit head file " + path + ": " +
                            std::strerror(err));
  }
  return Status::Ok();
}

Status CheckAuditTail(const std::optional<store::AuditRow>& last,
                      const std::optional<AuditHead>& stored,
                      const std::optional<AuditHead>& file,
                      const std::string& file_path, const AuditRecordAt& record_at) {
  const int64_t end = last ? last->seq : 0;
  const std::string ends = end == 0 ? "the log has no records"
                                    : "the log ends at record " + std::to_string(end);
  if (last && AuditHash(*last) != last->hash) {
    return Status::FailedPrecondition("audit record " + std::to_string(end) +
                                      ": its contents were edited");
  }
  if (!stored && end > 0) {
    return Status::FailedPrecondition(
        ends + " but the store holds no head (its meta audit_head was deleted or edited)");
  }
  if (stored) {
    if (stored->seq > end) {
      return Status::FailedPrecondition(ends + " but the store's head says record " +
                                        std::to_string(stored->seq) + ": " +
                                        Records(end + 1, stored->seq) + " deleted");
    }
    if (stored->seq < end) {
      return Status::FailedPrecondition(
          ends + " but the store's head says record " + std::to_string(stored->seq) + ": " +
          Records(stored->seq + 1, end) + " added outside the server");
    }
    if (end > 0 && stored->hash != last->hash) {
      return Status::FailedPrecondition("audit record " + std::to_string(end) +
                                        " is not the one the store's head names: it was "
                                        "replaced");
    }
  }
  if (file && file->seq > 0) {
    if (file->seq > end) {
      return Status::FailedPrecondition(
          ends + " but the head file " + file_path + " says record " +
          std::to_string(file->seq) + ": " + Records(end + 1, file->seq) +
          " deleted (and the store's head rewritten)");
    }
    Result<std::optional<store::AuditRow>> at = record_at(file->seq);
    if (!at.ok()) return at.status();
    if (!*at || (*at)->hash != file->hash) {
      return Status::FailedPrecondition(
          "audit record " + std::to_string(file->seq) + " is not the one the head file " +
          file_path + " names: the records from it on were replaced");
    }
  }
  return Status::Ok();
}

std::string ForLog(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return text;
}

Status VerifyAuditStore(store::Store& st, const std::string& store_url, size_t* records) {
  auto rows = st.ListAudit({});
  if (!rows.ok()) return rows.status();
  auto snap = st.Load();
  if (!snap.ok()) return snap.status();
  *records = rows->size();
  std::optional<AuditHead> stored = StoredAuditHead(snap->meta);
  std::optional<std::pair<int64_t, std::string>> head;
  if (stored) head = {stored->seq, stored->hash};
  ALLOT_RETURN_IF_ERROR(VerifyAuditChain(*rows, head));
  const std::string file = AuditHeadFileFor(store_url);
  if (file.empty()) return Status::Ok();
  Result<std::optional<AuditHead>> fh = ReadAuditHeadFile(file);
  if (!fh.ok()) return fh.status();
  std::optional<store::AuditRow> last;
  if (!rows->empty()) last = rows->back();
  return CheckAuditTail(last, stored, *fh, file,
                        [&rows](int64_t seq) -> Result<std::optional<store::AuditRow>> {
                          if (seq < 1 || seq > int64_t(rows->size())) {
                            return std::optional<store::AuditRow>();
                          }
                          return std::optional<store::AuditRow>((*rows)[seq - 1]);
                        });
}

}  // namespace allot::server
