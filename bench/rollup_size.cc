// Bytes of GPU telemetry per GPU per day in the SQLite store: writes DAYS
// days of one-minute rollups (every minute with data, as agents sampling
// every 10 s produce) for GPUS GPUs through the Store interface, the way the
// server writes them (each hour row rewritten every minute), checkpoints
// the WAL, and divides the file size.
//
//   build/allot_rollup_size [GPUS=200] [DAYS=2]
#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "server/telemetry.h"
#include "store/store.h"

int main(int argc, char** argv) {
  using namespace allot;
  const int gpus = argc > 1 ? std::atoi(argv[1]) : 200;
  const int days = argc > 2 ? std::atoi(argv[2]) : 2;
  std::string dir = std::filesystem::temp_directory_path().string() + "/allot-rollup-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) return 1;
  const std::string path = dir + "/a.db";
  size_t empty_bytes = 0;
  {
    auto st = store::OpenStore("sqlite:" + path);
    if (!st.ok()) return 1;
    empty_bytes = std::filesystem::file_size(path);
    const int64_t t0 = 1764547200000;
    std::vector<server::GpuRollup> acc(static_cast<size_t>(gpus));
    // One sample per GPU per minute is enough to close every minute.
    for (int64_t m = 0; m <= int64_t(days) * 1440; ++m) {
      store::Batch b;
      for (int g = 0; g < gpus; ++g) {
        store::RollupRow row;
        const std::string uuid = "GPU-" + std::to_string(100000 + g) + "-4f1c-9a7e-5d2b6c8e0f13";
        if (acc[size_t(g)].Add(uuid, "gpu-node-" + std::to_string(g / 8), t0 + m * 60000 + 1,
                               int((m * 7 + g) % 101), 30 + int(m % 50), 350.5 + g % 300,
                               (int64_t(g % 80) << 30), &row)) {
          b.rollups.push_back(std::move(row));
        }
      }
      if (!(*st)->Commit(b).ok()) return 1;
    }
  }
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE); VACUUM;", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  const size_t bytes = std::filesystem::file_size(path) - empty_bytes;
  std::printf("%d GPUs x %d days: %zu bytes, %.0f bytes per GPU per day "
              "(%.1f per GPU-minute; payload 6)\n",
              gpus, days, bytes, double(bytes) / gpus / days, double(bytes) / gpus / days / 1440);
  std::filesystem::remove_all(dir);
  return 0;
}
