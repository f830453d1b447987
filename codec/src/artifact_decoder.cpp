// Placeholder until the streaming decoder lands (in progress in this session); not a finished piece.
#include "memtrack/codec/artifact_decoder.h"

namespace memtrack::codec {
struct ArtifactDecoder::Impl {
  Status status{Errc::usage, "artifact decoding not built yet"};
  DecoderProgress progress;
};
ArtifactDecoder::ArtifactDecoder(ByteSource&, std::string, DecoderLimits) : impl_(std::make_unique<Impl>()) {}
ArtifactDecoder::~ArtifactDecoder() = default;
std::size_t ArtifactDecoder::next(std::span<Event>) { return 0; }
const Status& ArtifactDecoder::status() const { return impl_->status; }
const DecoderProgress& ArtifactDecoder::progress() const { return impl_->progress; }
}  // namespace memtrack::codec
