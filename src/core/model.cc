#include "core/model.h"

#include <algorithm>

namespace allot::core {

bool IsGpuResource(const std::string& r) {
  return r == kGpuResource || r.rfind(kMigResourcePrefix, 0) == 0;
}

std::string MigResourceName(const std::string& profile) {
  return std::string(kMigResourcePrefix) + profile;
}

bool IsWorkloadType(const std::string& type) {
  return type == "batch" || type == "training" || type == "inference" ||
         type == "notebook";
}

std::string SourceRef::Describe(const std::string& name) const {
  if (file.empty() && doc_index < 0) {
    // An object that came from the server's store: "ClusterQueue name".
    return kind.empty() ? "" : kind + " " + name;
  }
  std::string s = file.empty() ? "" : file + ": ";
  if (doc_index >= 0) s += "document " + std::to_string(doc_index);
  if (!kind.empty()) s += " (" + kind + " " + name + ")";
  return s;
}

bool Toleration::Tolerates(const Taint& t) const {
  if (effect && *effect != t.effect) return false;
  if (key.empty()) return op == TolerationOperator::kExists;
  if (key != t.key) return false;
  return op == TolerationOperator::kExists || value == t.value;
}

bool TaintsTolerated(const std::vector<Taint>& taints,
                     const std::vector<Toleration>& a,
                     const std::vector<Toleration>& b) {
  for (const Taint& t : taints) {
    if (t.effect == TaintEffect::kPreferNoSchedule) continue;
    auto tol = [&](const Toleration& x) { return x.Tolerates(t); };
    if (std::none_of(a.begin(), a.end(), tol) &&
        std::none_of(b.begin(), b.end(), tol)) {
      return false;
    }
  }
  return true;
}

bool LabelSelector::Matches(const Labels& labels) const {
  if (!LabelsMatch(match_labels, labels)) return false;
  for (const auto& req : match_expressions) {
    auto it = labels.find(req.key);
    bool has = it != labels.end();
    bool in = has && std::find(req.values.begin(), req.values.end(),
                               it->second) != req.values.end();
    switch (req.op) {
      case LabelSelectorRequirement::Op::kIn:
        if (!in) return false;
        break;
      case LabelSelectorRequirement::Op::kNotIn:
        if (in) return false;
        break;
      case LabelSelectorRequirement::Op::kExists:
        if (!has) return false;
        break;
      case LabelSelectorRequirement::Op::kDoesNotExist:
        if (has) return false;
        break;
    }
  }
  return true;
}

bool LabelsMatch(const Labels& selector, const Labels& labels) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

}  // namespace allot::core
