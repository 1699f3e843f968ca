// allot: the command-line entry point.
//
// Until the server lands, the only real verb is `allot schedule --dry-run`,
// which runs the scheduler once over manifest files (see cli/dry_run.h and
// docs/manifests.md). The argument parser is hand-written and tiny on
// purpose; it will give way to CLI11 when there are more verbs.
//
// Exit codes: 0 success, 2 usage error or bad input.
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/dry_run.h"

namespace {

constexpr char kVersion[] = "0.1.0";

constexpr char kUsage[] =
    "usage: allot <command> [flags]\n"
    "\n"
    "commands:\n"
    "  schedule --dry-run -f FILE [-f FILE ...]\n"
    "             load Kueue/Allot manifests, run the scheduler until it\n"
    "             settles and print admissions, preemptions and pending\n"
    "             workloads as JSON (\"-\" reads standard input)\n"
    "  version    print the version\n"
    "  help       print this help\n"
    "\n"
    "See docs/manifests.md for the input and output formats.\n";

// `message` starts with the command it is about ("allot: ...",
// "allot schedule: ...").
int UsageError(const std::string& message) {
  std::cerr << message << "\n"
            << "Run 'allot help' for usage.\n";
  return allot::cli::kExitUsage;
}

int Schedule(const std::vector<std::string_view>& args) {
  bool dry_run = false;
  std::vector<std::string> files;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (a == "--dry-run") {
      dry_run = true;
    } else if (a == "-f" || a == "--file") {
      if (i + 1 >= args.size()) {
        return UsageError("allot schedule: flag " + std::string(a) +
                          " needs a file name");
      }
      files.emplace_back(args[++i]);
    } else if (a.starts_with("--file=")) {
      files.emplace_back(a.substr(7));
    } else if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return allot::cli::kExitOk;
    } else if (a.starts_with("-") && a != "-") {
      return UsageError("allot schedule: unknown flag '" + std::string(a) +
                        "'");
    } else {
      return UsageError("allot schedule: unexpected argument '" +
                        std::string(a) + "' (files are given with -f FILE)");
    }
  }
  if (!dry_run) {
    std::cerr << "allot schedule: only --dry-run is supported until the "
                 "server lands (see README)\n";
    return allot::cli::kExitUsage;
  }
  if (files.empty()) {
    return UsageError("allot schedule: --dry-run needs at least one -f FILE");
  }
  return allot::cli::RunDryRun(files, std::cout, std::cerr);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return allot::cli::kExitUsage;
  }
  std::string_view command = args[0];
  std::vector<std::string_view> rest(args.begin() + 1, args.end());
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return allot::cli::kExitOk;
  }
  if (command == "version" || command == "--version") {
    if (!rest.empty()) return UsageError("allot version: takes no arguments");
    std::cout << "allot " << kVersion << "\n";
    return allot::cli::kExitOk;
  }
  if (command == "schedule") return Schedule(rest);
  return UsageError("allot: unknown command '" + std::string(command) + "'");
}
