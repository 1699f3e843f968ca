// Traces from history: the workloads an Allot server recorded (the items of
// GET /api/v1/workloads), replayed as a trace.
//
// Per finished workload (a condition "Finished"): tenant = namespace, queue
// = spec.queueName, priority = status.priority, type = spec.type, submit =
// metadata.creationTimestamp, duration = the Finished condition's time minus
// the last Admitted (True) condition's time, pods and per-pod GPUs (or MIG
// slices) from its first pod set that requests any. Workloads that have not
// finished are left out (a note counts them); one without a parsable time
// or GPU request is an issue whose "line" is its 1-based position in the
// list.
#pragma once

#include <boost/json/array.hpp>

#include <string>

#include "core/status.h"
#include "sim/trace.h"

namespace allot::sim {

Trace TraceFromWorkloads(const boost::json::array& items,
                         const std::string& source);

// RFC 3339 ("2024-05-01T10:00:00.250Z", offsets allowed) -> Unix ms.
bool ParseRfc3339Ms(const std::string& text, int64_t* out);

}  // namespace allot::sim
