// Test hooks of the stream encoder, kept out of the installed API (only pipeline/include is installed).
// This project's tests reach this header through the memtrack_pipeline_internal target
// (pipeline/CMakeLists.txt), which is neither installed nor exported.
#pragma once

#include <cstdint>
#include <functional>

namespace memtrack::pipeline::internal {

// Called on a pool thread before frame `frame` (0-based) is encoded, e.g. to inject delays or to watch how
// far encoding runs ahead of writing. Must be thread-safe and must not throw. An encoder without one pays
// one branch per frame.
using EncodeHook = std::function<void(std::uint64_t frame)>;

// While it lives, every StreamEncoder and encode_stream constructed on this thread takes a copy of `hook`
// (so an encoder keeps its hook after the scope ends). Scopes nest: the previous hook comes back when this
// one is destroyed. Not for use across threads: construct and destroy it on the thread that builds encoders.
class ScopedEncodeHook {
 public:
  explicit ScopedEncodeHook(EncodeHook hook);
  ~ScopedEncodeHook();
  ScopedEncodeHook(const ScopedEncodeHook&) = delete;
  ScopedEncodeHook& operator=(const ScopedEncodeHook&) = delete;

 private:
  EncodeHook previous_;
};

// The hook an encoder constructed now on this thread takes (empty outside any ScopedEncodeHook).
[[nodiscard]] const EncodeHook& current_encode_hook();

}  // namespace memtrack::pipeline::internal
