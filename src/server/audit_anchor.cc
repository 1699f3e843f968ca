#include "server/audit_anchor.h"

#include <cstdio>
#include <utility>

namespace allot::server {

std::string CheckAuditAtStart(store::Store& st, const store::Snapshot& snap,
                              const std::string& head_file) {
  std::optional<AuditHead> file;
  if (!head_file.empty()) {
    Result<std::optional<AuditHead>> r = ReadAuditHeadFile(head_file);
    if (!r.ok()) return r.status().message();
    file = *r;
  }
  Status s = CheckAuditTail(
      snap.last_audit, StoredAuditHead(snap.meta), file, head_file,
      [&st](int64_t seq) -> Result<std::optional<store::AuditRow>> {
        store::AuditFilter f;
        f.after_seq = seq - 1;
        f.limit = 1;
        Result<std::vector<store::AuditRow>> rows = st.ListAudit(f);
        if (!rows.ok()) return rows.status();
        if (rows->empty() || rows->front().seq != seq) return std::optional<store::AuditRow>();
        return std::optional<store::AuditRow>(rows->front());
      });
  if (!s.ok()) return s.message();
  if (!head_file.empty() && snap.last_audit &&
      (!file || file->seq != snap.last_audit->seq)) {
    if (file) {
      std::fprintf(stderr,
                   "allot: warning: the audit head file %s names record %lld, the store "
                   "ends at %lld: accepted as a crash between the store's commit and the "
                   "file's write (records %lld on were checked by the store's head only)\n",
                   head_file.c_str(), (long long)file->seq, (long long)snap.last_audit->seq,
                   (long long)file->seq + 1);
    }
    Status w = WriteAuditHeadFile(head_file, {snap.last_audit->seq, snap.last_audit->hash});
    if (!w.ok()) std::fprintf(stderr, "allot: %s\n", w.message().c_str());
  }
  return "";
}

AuditAnchor::AuditAnchor(std::string head_file, int64_t seq)
    : file_(std::move(head_file)), logged_(seq) {
  if (!file_.empty()) thread_ = std::thread([this] { Loop(); });
}

AuditAnchor::~AuditAnchor() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AuditAnchor::Committed(const std::vector<const store::Batch*>& batches) {
  const std::string* text = nullptr;
  for (const store::Batch* b : batches) {
    if (auto it = b->meta.find("audit_head"); it != b->meta.end()) text = &it->second;
  }
  if (text == nullptr) return;
  std::optional<AuditHead> h = ParseAuditHead(*text);
  if (!h) return;
  if (h->seq / kLogEvery != logged_ / kLogEvery) {
    std::fprintf(stderr, "allot: audit head: record %lld, hash %s\n", (long long)h->seq,
                 h->hash.c_str());
    logged_ = h->seq;
  }
  if (file_.empty()) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    pending_ = std::move(*h);
  }
  cv_.notify_all();
}

void AuditAnchor::Flush() {
  std::unique_lock<std::mutex> l(mu_);
  ++flushing_;
  cv_.notify_all();
  cv_.wait(l, [&] { return !pending_ && !writing_; });
  --flushing_;
}

void AuditAnchor::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return stop_ || pending_; });
    if (!pending_) return;  // Stopped, everything written.
    AuditHead h = std::move(*pending_);
    pending_.reset();
    writing_ = true;
    l.unlock();
    Status s = WriteAuditHeadFile(file_, h);
    if (!s.ok()) std::fprintf(stderr, "allot: %s\n", s.message().c_str());
    l.lock();
    writing_ = false;
    cv_.notify_all();
    // At most one write per kMinInterval (its fsync competes with the
    // store's); a stop or a Flush does not wait for it.
    cv_.wait_for(l, kMinInterval, [&] { return stop_ || flushing_ > 0; });
  }
}

}  // namespace allot::server
