#include "memtrack/codec/artifact_decoder.h"

#include <algorithm>
#include <cstring>

#include "memtrack/codec/frame_walker.h"

namespace memtrack::codec {

struct ArtifactDecoder::Impl {
  FrameWalker walker;
  DecoderProgress progress;
  std::span<const Event> ready;  // the walker's last events not taken yet

  Impl(ByteSource& s, std::string n, DecoderLimits l) : walker(s, std::move(n), l) {}

  void update() {
    progress.frames = walker.data_frames();
    progress.skippable_frames = walker.skippable_frames();
    progress.compressed_bytes = walker.bytes_read();
  }
};

ArtifactDecoder::ArtifactDecoder(ByteSource& source, std::string name, DecoderLimits limits)
    : impl_(std::make_unique<Impl>(source, std::move(name), limits)) {}

ArtifactDecoder::~ArtifactDecoder() = default;

std::size_t ArtifactDecoder::next(std::span<Event> out) {
  Impl& d = *impl_;
  std::size_t filled = 0;
  while (filled < out.size()) {
    if (!d.ready.empty()) {
      const std::size_t n = std::min(out.size() - filled, d.ready.size());
      std::memcpy(out.data() + filled, d.ready.data(), n * sizeof(Event));
      d.ready = d.ready.subspan(n);
      filled += n;
      d.progress.events += n;
      continue;
    }
    const FrameWalker::Item item = d.walker.next();
    if (item == FrameWalker::Item::end) break;
    if (item == FrameWalker::Item::events) {
      d.ready = d.walker.events();
      if (d.walker.frame_done()) d.progress.decompressed_bytes += d.walker.frame_content_bytes();
    }
  }
  d.update();
  return filled;
}

const Status& ArtifactDecoder::status() const { return impl_->walker.status(); }
const DecoderProgress& ArtifactDecoder::progress() const { return impl_->progress; }

bool ArtifactDecoder::resync(std::uint64_t& skipped_from, std::uint64_t& resumed_at) {
  impl_->ready = {};
  const bool found = impl_->walker.resync(skipped_from, resumed_at);
  impl_->update();
  return found;
}

}  // namespace memtrack::codec
