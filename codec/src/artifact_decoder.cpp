#include "memtrack/codec/artifact_decoder.h"

#include <algorithm>
#include <cstring>

#include "memtrack/codec/frame_walker.h"

namespace memtrack::codec {

struct ArtifactDecoder::Impl {
  FrameWalker walker;
  DecoderProgress progress;
  std::span<const Event> ready;  // the walker's last events not taken yet
  std::size_t taken = 0;         // of the walker's last events
  std::size_t next_foreign = 0;  // the walker's last foreign events before it were taken
  ForeignEvents foreign;         // those before the events next() returned (copies: the walker moves on)

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
  d.foreign.clear();
  std::size_t filled = 0;
  while (filled < out.size()) {
    const ForeignEvents& foreign = d.walker.foreign();
    if (d.next_foreign < foreign.size()) {
      const ForeignEvent f = foreign[d.next_foreign];
      if (f.position == d.taken) {
        if (filled > 0) break;  // it comes after the events filled so far: the next call's
        d.foreign.add(0, f);
        ++d.next_foreign;
        continue;
      }
    }
    if (!d.ready.empty()) {
      const std::size_t due = d.next_foreign < foreign.size() ? foreign[d.next_foreign].position - d.taken : SIZE_MAX;
      const std::size_t n = std::min({out.size() - filled, d.ready.size(), due});
      std::memcpy(out.data() + filled, d.ready.data(), n * sizeof(Event));
      d.ready = d.ready.subspan(n);
      d.taken += n;
      filled += n;
      d.progress.events += n;
      continue;
    }
    const FrameWalker::Item item = d.walker.next();
    if (item == FrameWalker::Item::end) break;
    if (item == FrameWalker::Item::events) {
      d.ready = d.walker.events();
      d.taken = 0;
      d.next_foreign = 0;
      if (d.walker.frame_done()) d.progress.decompressed_bytes += d.walker.frame_content_bytes();
    }
  }
  d.update();
  return filled;
}

const Status& ArtifactDecoder::status() const { return impl_->walker.status(); }
const DecoderProgress& ArtifactDecoder::progress() const { return impl_->progress; }
const ForeignEvents& ArtifactDecoder::foreign() const { return impl_->foreign; }

bool ArtifactDecoder::resync(std::uint64_t& skipped_from, std::uint64_t& resumed_at) {
  impl_->ready = {};
  impl_->taken = impl_->next_foreign = 0;
  impl_->foreign.clear();
  const bool found = impl_->walker.resync(skipped_from, resumed_at);
  impl_->update();
  return found;
}

}  // namespace memtrack::codec
