// metadata.generateName: names for objects that give a prefix instead of a
// name, as the Kubernetes API server makes them (`kubectl create` of a Job
// with generateName: sample-job- gets sample-job-x7k2p).
//
// A name is the prefix (cut to 58 characters, so that the name fits 63)
// followed by 5 characters drawn from Kubernetes' alphabet of lower-case
// consonants and digits (no vowels, so no words; no 0, 1, 3, which read as
// letters). A name that is taken is drawn again, up to kMaxNameTries times.
//
// Who picks: the server, for each apply or create (server/state_api.cc);
// the offline commands (`allot schedule --dry-run`, `allot simulate`) with
// a fixed seed, so that their output stays reproducible.
//
// Thread-safety: pure functions (the random source is the caller's).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/model.h"
#include "core/status.h"

namespace allot::core {

inline constexpr int kGeneratedSuffixLength = 5;
inline constexpr int kMaxNameTries = 16;

// prefix (cut to 63 - 5 characters) + 5 characters chosen by `random`.
std::string GenerateName(std::string_view prefix,
                         const std::function<uint64_t()>& random);

// Whether object `key` of `kind` ("Workload", "LocalQueue", ...; keys of
// namespaced kinds are "namespace/name") exists outside the Config.
using NameTaken =
    std::function<bool(std::string_view kind, const std::string& key)>;

// Names every object of *config whose name is empty and generate_name is
// set, with names that neither `taken` nor another object of the same kind
// in *config has. After kMaxNameTries draws that are all taken, an
// AlreadyExists error naming the object and its prefix (config then keeps
// the names given so far).
Status GenerateNames(Config* config, const NameTaken& taken,
                     const std::function<uint64_t()>& random);

// A fixed-seed random source for the offline commands.
std::function<uint64_t()> SeededRandom(uint64_t seed);

}  // namespace allot::core
