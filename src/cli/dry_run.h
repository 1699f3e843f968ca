// `allot schedule --dry-run`: one scheduling pass over manifest files.
//
// RunDryRun loads every file into one core::Config (in the order given),
// validates it, builds a sched::Scheduler, runs cycles until nothing changes
// and prints the outcome as ONE JSON object on `out`, followed by a newline
// (shape in docs/manifests.md):
//
//   {"admitted":[...],"preempted":[...],"pending":[...]}
//
// The output is deterministic: the same files give the same bytes.
//
// Errors (unreadable file, parse or validation error, a config the scheduler
// rejects) print "allot: <message>\n" on `err`, print nothing on `out` and
// return 2. Success returns 0. If the scheduler hits its cycle safety cap, a
// warning goes to `err` and the (partial) result is still printed.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace allot::cli {

// Exit codes of the allot command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;  // Bad flags, bad input files.

// `files` are paths; "-" reads standard input. Returns the exit code.
int RunDryRun(const std::vector<std::string>& files, std::ostream& out,
              std::ostream& err);

}  // namespace allot::cli
