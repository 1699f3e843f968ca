// How agents and the server agree on liveness.
//
// An agent's heartbeat is its long poll (POST /api/v1/agent/sync), held by
// the server for at most max(500 ms, node timeout / 3), so a connected agent
// is heard from well within one timeout. A disconnected agent retries with
// a backoff doubling from 500 ms and capped at kMaxReconnectBackoffMs.
//
// The server refuses a --node-timeout under kMinNodeTimeoutS (a retrying
// agent could not be heard from in time), and after it starts gives every
// node a grace period of one node timeout plus kMaxReconnectBackoffMs before
// it may be declared NotReady: agents that backed off while it was down get
// a full retry interval to come back, and a restart evicts nobody
// (docs/server.md, "Nodes and agents").
#pragma once

#include <cstdint>

namespace allot::agent {

inline constexpr int64_t kMaxReconnectBackoffMs = 2000;
inline constexpr int64_t kMinNodeTimeoutS = 3;

}  // namespace allot::agent
