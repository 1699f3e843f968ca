// Garbage collection of the container runtime's image cache
// (STATE/images, container.h), as the kubelet's image GC does: an image
// no pod uses is removed once it has been unused for `max_age`, and when
// the disk holding the cache is fuller than `high_percent`, unused images
// are removed least recently used first until it is at `low_percent`.
// Older digests of an image (left by Always pulls) go as soon as no pod
// started before the newer one is still there. An image a pod on this
// node names (STATE/pods/*/pod.json) is never removed.
//
// Thread-compatible: one collection at a time (the executor runs it on a
// thread of its own); pulls take the image's lock, and so does the
// collector, which skips an image that is being pulled.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace allot::agent {

struct ImageGcPolicy {
  int64_t max_age_ms = 7LL * 86400000;  // 0: no removal by age.
  int high_percent = 85;                // 0 or >= 100: no removal by disk use.
  int low_percent = 80;
};

struct ImageGcResult {
  std::vector<std::string> removed;  // "KEY (why)", "KEY/DIGEST (superseded)".
  int64_t bytes = 0;                 // What they held.
};

// The image cache key of `image` (STATE/images/KEY), as pulls name it.
std::string ImageKey(const std::string& image);

// One collection over STATE=`state_dir`. `used_percent` says how full the
// disk holding the cache is now (it is asked again after each removal).
ImageGcResult CollectImages(const std::string& state_dir, const ImageGcPolicy& policy,
                            int64_t now_unix_ms, const std::function<int()>& used_percent);

// How full the file system holding `path` is, in percent (statvfs); 0 when
// it cannot be read.
int DiskUsedPercent(const std::string& path);

}  // namespace allot::agent
