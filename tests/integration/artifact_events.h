// The events of an artifact as a third-party consumer reads them: python3-zstandard + python3-msgpack through
// read_artifact.py (one "pid tid timestamp addr type size old_addr" line per event, "-" for an absent size or
// old address). Shared by the integration tests; each target defines MEMTRACK_INTEGRATION_DIR and
// MEMTRACK_SYSTEM_PYTHON (tests/integration/CMakeLists.txt).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace memtrack::testing_integration {

struct ArtifactEvent {
  int pid = 0;
  int tid = 0;
  std::uint64_t ts = 0;
  std::uint64_t addr = 0;
  std::string type;
  std::uint64_t size = 0;  // 0 when absent (a free)
  bool has_old = false;
  std::uint64_t old_addr = 0;
};

// Fails the calling test (with the reader's stderr) when the python readers cannot read `artifact`.
inline std::vector<ArtifactEvent> read_artifact_events(const std::filesystem::path& artifact) {
  const std::string text = artifact.string() + ".txt";
  const std::string err = artifact.string() + ".pyerr";
  const std::string cmd = std::string(MEMTRACK_SYSTEM_PYTHON) + " " MEMTRACK_INTEGRATION_DIR "/read_artifact.py '" +
                          artifact.string() + "' > '" + text + "' 2> '" + err + "'";
  const int rc = std::system(cmd.c_str());
  std::ifstream err_in(err);
  std::stringstream err_text;
  err_text << err_in.rdbuf();
  EXPECT_EQ(rc, 0) << "python3-zstandard/msgpack could not read " << artifact << ": " << err_text.str();
  std::vector<ArtifactEvent> events;
  std::ifstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    ArtifactEvent e;
    std::string size, old;
    ls >> e.pid >> e.tid >> e.ts >> e.addr >> e.type >> size >> old;
    e.size = size == "-" ? 0 : std::stoull(size);
    e.has_old = !old.empty() && old != "-";
    e.old_addr = e.has_old ? std::stoull(old) : 0;
    events.push_back(e);
  }
  return events;
}

}  // namespace memtrack::testing_integration
