// The options `record` and `attach` share, parsed alike: --workers, --compact, --level (its default by
// encoding), --stack-depth and --no-stacks, --no-resident. Into runtime::RecordOptions or
// runtime::AttachOptions, which name these fields the same.
#pragma once

#include <cstdint>
#include <string>

#include "args.h"
#include "memtrack/codec/compact.h"
#include "memtrack/runtime/recorder.h"

namespace memtrack::tools {

template <typename Options>
void parse_recording_flags(Args& args, Options& options) {
  options.workers = static_cast<unsigned>(parse_int("workers", args.value("workers").value_or("0"), 0, 1024));
  options.compact = args.flag("compact");
  const int default_level = options.compact ? codec::kDefaultCompactLevel : runtime::kDefaultRecordLevel;
  options.level =
      static_cast<int>(parse_int("level", args.value("level").value_or(std::to_string(default_level)), -7, 22));
  options.stack_depth = static_cast<std::uint32_t>(parse_int(
      "stack-depth", args.value("stack-depth").value_or(std::to_string(runtime::kDefaultStackDepth)), 1, 256));
  if (args.flag("no-stacks")) options.stack_depth = 0;
  options.resident = !args.flag("no-resident");
}

}  // namespace memtrack::tools
