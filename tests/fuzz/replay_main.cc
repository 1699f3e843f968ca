// Replays fuzz inputs through a fuzz target without libFuzzer, so that the
// seeds and the reproducers of fixed findings (tests/fuzz/corpus/*) run in
// every build `make test` makes (GCC release and ASan + UBSan), not only in
// the Clang fuzzing build. With --mutations N it then fuzzes: N inputs made
// from the corpus by random edits (byte flips, insertions, deletions,
// copies, dictionary tokens, splices of two inputs), from a fixed seed, so
// the run is the same on every machine and CI cannot go red on a chance
// finding. Not coverage-guided (that is `make fuzz`), but it runs on every
// `make test` in both builds.
//
//   allot_manifest_replay [--mutations N] [--seed S] [--dict FILE]
//                         [--rss-limit-mb M] [--timeout S]
//                         tests/fuzz/corpus/manifest [FILE|DIR ...]
//
// A blow-up is a finding too, as under libFuzzer's -rss_limit_mb and
// -timeout: --rss-limit-mb caps the address space (RLIMIT_AS; under ASan,
// which reserves terabytes of it, its hard_rss_limit_mb and
// malloc_limit_mb instead: __asan_default_options below), so an input
// that makes a target allocate without bound aborts with std::bad_alloc
// or an ASan report; --timeout (default 30 s) ends the process with
// SIGALRM when one input runs longer. Both defaults are off / 30 s.
//
// A finding aborts the process as it does under libFuzzer (the targets
// call abort() on a broken property); before each mutated input the
// driver writes it to ALLOT_FUZZ_LAST (when set), so the input that
// aborted is kept. Exit code 0 when every input ran, 2 on bad arguments.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#if defined(__SANITIZE_ADDRESS__)
#define ALLOT_REPLAY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ALLOT_REPLAY_ASAN 1
#endif
#endif

#ifdef ALLOT_REPLAY_ASAN
// ASan cannot run under RLIMIT_AS: cap the resident set and any single
// allocation instead (ctest's fuzz tests set no ASAN_OPTIONS of their own).
extern "C" const char* __asan_default_options() {
  return "hard_rss_limit_mb=2048:malloc_limit_mb=1024";
}
#endif

namespace {

// splitmix64: a small generator whose sequence is the same everywhere.
struct Rng {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return n == 0 ? 0 : size_t(Next() % n); }
};

// libFuzzer's dictionary format: one "quoted token" a line, \xNN and \"
// escapes; '#' lines and blank lines are skipped.
std::vector<std::string> ReadDict(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    size_t q = line.find('"');
    if (line.empty() || line[0] == '#' || q == std::string::npos) continue;
    std::string tok;
    for (size_t i = q + 1; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) {
        if (line[i + 1] == 'x' && i + 3 < line.size()) {
          tok += char(std::strtol(line.substr(i + 2, 2).c_str(), nullptr, 16));
          i += 3;
        } else {
          tok += line[++i];
        }
      } else {
        tok += line[i];
      }
    }
    if (!tok.empty()) out.push_back(tok);
  }
  return out;
}

std::string Mutate(std::string d, const std::vector<std::string>& corpus,
                   const std::vector<std::string>& dict, Rng& rng) {
  const size_t edits = 1 + rng.Below(4);
  for (size_t e = 0; e < edits; ++e) {
    const size_t at = rng.Below(d.size() + 1);
    switch (rng.Below(7)) {
      case 0:  // Flip a bit.
        if (!d.empty()) d[rng.Below(d.size())] ^= char(1u << rng.Below(8));
        break;
      case 1:  // Insert a random byte.
        d.insert(at, 1, char(rng.Below(256)));
        break;
      case 2: {  // Delete a short range.
        if (d.empty()) break;
        size_t from = rng.Below(d.size());
        d.erase(from, 1 + rng.Below(16));
        break;
      }
      case 3: {  // Copy a range elsewhere.
        if (d.empty()) break;
        size_t from = rng.Below(d.size());
        std::string piece = d.substr(from, 1 + rng.Below(32));
        d.insert(rng.Below(d.size() + 1), piece);
        break;
      }
      case 4:  // Insert a dictionary token.
      case 5:
        if (!dict.empty()) d.insert(at, dict[rng.Below(dict.size())]);
        break;
      default: {  // Splice: this input's head, another's tail.
        const std::string& other = corpus[rng.Below(corpus.size())];
        d = d.substr(0, at) + other.substr(rng.Below(other.size() + 1));
        break;
      }
    }
    if (d.size() > 64 * 1024) d.resize(64 * 1024);
  }
  return d;
}

unsigned g_timeout_s = 30;

// One input, within the time cap: SIGALRM's default action ends the
// process, and ctest reports the signal.
void Run(const std::string& data) {
  alarm(g_timeout_s);
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  alarm(0);
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  uint64_t mutations = 0;
  uint64_t seed = 1;
  std::string dict_path;
  uint64_t rss_limit_mb = 0;
  uint64_t timeout_s = 30;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--mutations" || arg == "--seed" || arg == "--dict" ||
         arg == "--rss-limit-mb" || arg == "--timeout") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (arg == "--dict") {
        dict_path = v;
        continue;
      }
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0') {
        std::fprintf(stderr, "replay: %s wants a number, got '%s'\n", arg.c_str(), v.c_str());
        return 2;
      }
      (arg == "--seed"           ? seed
       : arg == "--rss-limit-mb" ? rss_limit_mb
       : arg == "--timeout"      ? timeout_s
                                 : mutations) = n;
      continue;
    }
    std::error_code ec;
    fs::path p(arg);
    if (fs::is_directory(p, ec)) {
      for (const auto& e : fs::directory_iterator(p, ec)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "replay: %s: not a file or directory\n", argv[i]);
      return 2;
    }
  }
  g_timeout_s = static_cast<unsigned>(timeout_s);
#ifndef ALLOT_REPLAY_ASAN
  if (rss_limit_mb > 0) {
    rlimit lim{rlim_t(rss_limit_mb) << 20, rlim_t(rss_limit_mb) << 20};
    if (setrlimit(RLIMIT_AS, &lim) != 0) {
      std::perror("replay: setrlimit(RLIMIT_AS)");
      return 2;
    }
  }
#endif
  std::sort(files.begin(), files.end());
  std::vector<std::string> corpus;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    corpus.push_back(ss.str());
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", f.c_str(), corpus.back().size());
    Run(corpus.back());
  }
  std::printf("replay: %zu inputs ran\n", files.size());
  if (mutations == 0 || corpus.empty()) return 0;

  const std::vector<std::string> dict = dict_path.empty() ? std::vector<std::string>{}
                                                          : ReadDict(dict_path);
  const char* last = std::getenv("ALLOT_FUZZ_LAST");
  Rng rng{seed};
  for (uint64_t i = 0; i < mutations; ++i) {
    const std::string input = Mutate(corpus[rng.Below(corpus.size())], corpus, dict, rng);
    if (last != nullptr) {
      std::ofstream(last, std::ios::binary | std::ios::trunc) << input;
    }
    Run(input);
  }
  std::printf("replay: %llu mutated inputs ran (seed %llu, %zu dictionary tokens)\n",
              static_cast<unsigned long long>(mutations), static_cast<unsigned long long>(seed),
              dict.size());
  return 0;
}
