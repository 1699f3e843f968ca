// The manifests of `allot up --demo`, compiled in from examples/up/ (CMake
// generates the definitions from those files at configure time).
#pragma once

namespace allot::cli {

extern const char kDemoYaml[];       // examples/up/demo.yaml
extern const char kDemoLaterYaml[];  // examples/up/demo-later.yaml

}  // namespace allot::cli
