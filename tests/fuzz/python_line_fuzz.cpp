// Property: a CPython line table, whatever its bytes (the recorder reads it from a traced process's
// memory), gives each code unit the same line through python_line (from the table's start at each call) and
// through one PythonLines cursor asked in increasing order, then in decreasing order; nothing reads past the
// table and every call ends (runtime/recorder/src/stack_tables.h).
//
// The first input byte is a recipe: bit 0 the table's format (0 the location table of 3.11 to 3.13, 1 the
// byte pairs of 3.10), the other bits the code's first line. The rest is the table.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "stack_tables.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memtrack::runtime;
  if (size == 0) return 0;
  const std::uint32_t format = (data[0] & 1) != 0 ? kPythonLineTable310 : kPythonLocationTable;
  const std::uint32_t first_line = data[0] >> 1;
  // A copy of exactly the table's bytes, so a read past its end is one past a heap block (ASan); at most
  // 1 KiB, as python_line's cost is the table's size per call.
  const std::string table(reinterpret_cast<const char*>(data + 1), std::min<std::size_t>(size - 1, 1024));
  // A location table entry covers up to 8 code units, a 3.10 pair up to 127: the indices past the table's
  // end as well, up to 4,096.
  const std::uint64_t units = std::min<std::uint64_t>(static_cast<std::uint64_t>(table.size()) * 128 + 2, 4096);
  std::vector<std::uint32_t> lines(units);
  for (std::uint64_t i = 0; i < units; ++i) lines[i] = python_line(table, first_line, i, format);
  PythonLines up(table, first_line, format);
  for (std::uint64_t i = 0; i < units; ++i)
    FUZZ_CHECK(up.line(i) == lines[i], "unit %llu: cursor (up) %u, python_line %u", static_cast<unsigned long long>(i),
               up.line(i), lines[i]);
  PythonLines down(table, first_line, format);
  for (std::uint64_t i = units; i-- > 0;)
    FUZZ_CHECK(down.line(i) == lines[i], "unit %llu: cursor (down) %u, python_line %u",
               static_cast<unsigned long long>(i), down.line(i), lines[i]);
  return 0;
}
