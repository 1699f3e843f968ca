// TempDirTest: the gtest fixture of a test that works in a temporary
// directory of its own, dir_, made in SetUp and removed with everything in
// it in TearDown. Test-only and header-only; it depends on no module.
#pragma once

#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace allot::testing {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "allot_test_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // The path of `name` in dir_.
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  // Writes `text` to `name` in dir_; its path.
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = Path(name);
    std::ofstream(p) << text;
    return p;
  }

  std::string dir_;
};

}  // namespace allot::testing
