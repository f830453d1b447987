// Property: decode_context_frame never crashes, hangs or allocates beyond its limits on any bytes, and what
// it accepts re-encodes to records that decode to the same records (the writer and the reader agree).
#include "fuzz/fuzz_common.h"
#include "memtrack/codec/context.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memtrack::codec;
  const std::span<const std::byte> frame(reinterpret_cast<const std::byte*>(data), size);
  std::vector<ContextRecord> records;
  if (!decode_context_frame(frame, 0, records)) return 0;
  FrameCompressor compressor(1);
  std::vector<std::byte> scratch, again;
  FUZZ_CHECK(encode_context_frame(records, compressor, scratch, again).is_ok(), "re-encoding failed\n");
  std::vector<ContextRecord> back;
  FUZZ_CHECK(decode_context_frame(again, 0, back).is_ok() && back == records, "round trip differs\n");
  return 0;
}
