// Context records on their way into the artifact (docs/FORMAT.md, "Context section"): whoever learns of a
// record (the recorder's reader thread, as it meets lifecycle notes in the ring) adds it with its position;
// the encoder's writer thread, after each data frame it writes and once more at the end (before the frame
// index), takes everything pending and writes it as one context frame. So a record is in the artifact no
// later than one data frame after the events it describes, and a recording cut short keeps the context of
// every frame it keeps.
//
// Thread safety: add() from any thread, take_frame() from one thread (the writer). A mutex guards the
// pending list: records are per process (fork, exec, exit), not per event, so it is never contended on the
// event path.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "memtrack/codec/context.h"
#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/status.h"

namespace memtrack::pipeline {

class ContextChannel {
 public:
  // Context frames: zstd's fastest positive level (docs/RUNTIME.md, "Call stacks": level 3 cost more CPU for
  // frames no smaller).
  explicit ContextChannel(int level = 1) : compressor_(level) {}

  // A StackNodes record that continues one of the same process still pending (its first id right after
  // that one's last, with only other processes' StackNodes records between) is joined to it instead, up to
  // 4,096 nodes a record: a process notes its new nodes a few at a time, and one record per note cost the
  // recorder an allocation and a msgpack map each, and the artifact their keys (docs/FORMAT.md, "StackNodes":
  // a record's `event` is then that of its first nodes, and the later ones are defined earlier than their own
  // note, never later).
  void add(codec::ContextRecord record);

  // Writer thread: if records are pending, replaces `frame` with one context frame holding all of them (in
  // the order they were added, a joined StackNodes record at its first note's place) and returns ok; with
  // none pending, leaves `frame` empty. On an encoding error the records are dropped and the error returned
  // (the caller decides whether the stream goes on).
  codec::Status take_frame(std::vector<std::byte>& frame);

  // Records added so far and not yet taken.
  [[nodiscard]] std::size_t pending() const;

 private:
  bool join_stack_nodes(const codec::StackNodes& nodes);  // under mutex_: true if `nodes` went into a pending record

  mutable std::mutex mutex_;
  std::vector<codec::ContextRecord> pending_;
  std::vector<codec::ContextRecord> taking_;  // writer-owned: swapped with pending_ under the lock
  std::vector<std::byte> scratch_;            // writer-owned msgpack buffer, reused
  codec::FrameCompressor compressor_;         // writer-owned
};

}  // namespace memtrack::pipeline
