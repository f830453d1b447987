// The recorder's writer is the pipeline's StreamEncoder: frames encoded in parallel on the oneTBB pool and
// written in order by the encoder's own writer thread. push() blocks while K frames are in flight, which
// stops the reader, which fills the ring, which makes the program wait: backpressure end to end.
#include "event_writer.h"

#include "memtrack/pipeline/sink.h"
#include "memtrack/pipeline/stream_encoder.h"

namespace memtrack::runtime {
namespace {

class PipelineWriter final : public EventWriter {
 public:
  PipelineWriter(int fd, const std::string& name, const pipeline::EncoderOptions& options)
      : sink_(fd, name), encoder_(sink_, options) {}

  codec::Status push(std::span<const codec::Event> events) override { return encoder_.push(events); }
  codec::Status finish() override { return encoder_.finish(); }
  std::uint64_t bytes_written() const override { return encoder_.stats().bytes_out; }

 private:
  pipeline::FdSink sink_;
  pipeline::StreamEncoder encoder_;
};

}  // namespace

std::unique_ptr<EventWriter> make_event_writer(int fd, const std::string& name, unsigned workers, int level) {
  pipeline::EncoderOptions options;
  options.workers = workers;
  options.level = level;
  return std::make_unique<PipelineWriter>(fd, name, options);
}

}  // namespace memtrack::runtime
