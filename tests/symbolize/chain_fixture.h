// Shared by the symbolization tests: runs the chain program once and reads what it captured, and finds the
// `// @name` marker lines in its sources.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "memtrack/symbolize/symbolizer.h"

namespace memtrack::symbolize::testing {

struct Capture {
  std::string module;  // absolute path of the module
  std::uint64_t bias = 0;
  std::uint64_t address = 0;  // run-time return address
  BuildId build_id;

  [[nodiscard]] std::uint64_t relative() const { return address - bias; }
  [[nodiscard]] ModuleRef ref() const { return {module, build_id}; }
};

inline std::string programs_dir() { return MEMTRACK_SYMBOLIZE_DIR; }
inline std::string sources_dir() { return MEMTRACK_SYMBOLIZE_SOURCES; }
inline std::string lib_path() { return programs_dir() + "/libmtsym_chain.so"; }
inline std::string exe_path() { return programs_dir() + "/chain"; }

// label -> capture, from one run of the chain program.
inline const std::map<std::string, Capture>& captures() {
  static const std::map<std::string, Capture> result = [] {
    std::map<std::string, Capture> out;
    const std::string file = ::testing::TempDir() + "/symbolize_chain." + std::to_string(::getpid()) + ".txt";
    const std::string command = exe_path() + " " + file;
    if (std::system(command.c_str()) != 0) {
      ADD_FAILURE() << "running " << command << " failed";
      return out;
    }
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string label;
      std::string bias;
      std::string address;
      std::string id;
      Capture capture;
      fields >> label >> capture.module >> bias >> address >> id;
      capture.bias = std::stoull(bias, nullptr, 16);
      capture.address = std::stoull(address, nullptr, 16);
      EXPECT_TRUE(build_id_from_hex(id.data(), id.size(), capture.build_id)) << line;
      out[label] = capture;
    }
    std::remove(file.c_str());
    return out;
  }();
  return result;
}

inline const Capture& capture(const std::string& label) {
  static const Capture none;
  auto it = captures().find(label);
  if (it == captures().end()) {
    ADD_FAILURE() << "the chain program captured no '" << label << "'";
    return none;
  }
  return it->second;
}

// The line of `// @marker` in programs/<source>.
inline std::uint32_t marker_line(const std::string& source, const std::string& marker) {
  std::ifstream in(sources_dir() + "/" + source);
  std::string line;
  std::uint32_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find("// @" + marker) != std::string::npos) return number;
  }
  ADD_FAILURE() << "no marker @" << marker << " in " << source;
  return 0;
}

inline std::string source_file(const std::string& source) {
  return std::filesystem::weakly_canonical(sources_dir() + "/" + source).string();
}

}  // namespace memtrack::symbolize::testing
