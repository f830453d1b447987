// Recorder options for benchmarks only. They are not part of the recorder's API (memtrack/runtime/recorder.h):
// `memtrack record` reaches them through the recorder's environment, and code inside the recorder can pass
// them to record() directly.
#pragma once

#include "memtrack/runtime/recorder.h"

namespace memtrack::runtime {

struct InternalRecordOptions {
  // Drain the ring but encode and write nothing, to measure the transport's own cost ("transport only" in
  // bench/record_overhead.sh and bench/record_ab.sh): a file named by RecordOptions::output is created but
  // stays empty, and no default-named one is created. MEMTRACK_RECORD_DISCARD=1.
  bool discard = false;

  // The options the recorder's environment asks for (the variables named above).
  static InternalRecordOptions from_environment();
};

// record(options) is record(options, InternalRecordOptions::from_environment()).
RecordResult record(const RecordOptions& options, const InternalRecordOptions& internal);

}  // namespace memtrack::runtime
