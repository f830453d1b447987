// Recorder options for benchmarks and tests only. They are not part of the recorder's API
// (memtrack/runtime/recorder.h): `memtrack record` reaches them through the recorder's environment, and
// code inside the recorder (or a test that includes this header) can pass them to record() directly.
#pragma once

#include <string>

#include "memtrack/runtime/recorder.h"

namespace memtrack::runtime {

struct InternalRecordOptions {
  // Drain the ring but encode and write nothing, to measure the transport's own cost ("transport only" in
  // bench/record_overhead.sh and bench/record_ab.sh): a file named by RecordOptions::output is created but
  // stays empty, and no default-named one is created. MEMTRACK_RECORD_DISCARD=1.
  bool discard = false;

  // Test accessor of the context records until the encoder writes them (EncoderOptions::context): when not
  // empty, the records still pending in the recorder's ContextChannel at the end are written to this file as
  // one context frame (codec::decode_context_frame reads it). MEMTRACK_RECORD_CONTEXT_DUMP=<path>.
  std::string context_dump;

  // The options the recorder's environment asks for (the variables named above).
  static InternalRecordOptions from_environment();
};

// record(options) is record(options, InternalRecordOptions::from_environment()).
RecordResult record(const RecordOptions& options, const InternalRecordOptions& internal);

}  // namespace memtrack::runtime
