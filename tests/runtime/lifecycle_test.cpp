// The recorder's reader path for lifecycle notes (runtime/recorder/src/lifecycle.h): notes and events written
// into a real SharedRing, read by RingReader, turned into context records with their event positions.
#include "lifecycle.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memtrack/analysis/live_heap.h"
#include "memtrack/codec/context.h"
#include "memtrack/pipeline/context_channel.h"
#include "processes.h"
#include "ring_reader.h"
#include "shared_ring.h"

namespace {

using namespace memtrack;
using namespace memtrack::runtime;

// A producer's event, as the preload writes it (ring_client.h), for a ring with room.
void put_event(SharedRing& ring, std::int32_t pid, std::uint64_t addr, std::uint64_t size) {
  const std::uint64_t t = ring.header()->head.fetch_add(1);
  RingSlot& s = ring.slot(t);
  ASSERT_TRUE(slot_free(ring.header(), t));
  RingEvent e{};
  e.timestamp = 1;
  e.addr = addr;
  e.size = size;
  e.pid = pid;
  e.tid = pid;
  e.kind = RingEventKind::Malloc;
  s.event = e;
  s.seq.store(seq_word(t + 1, t, ring.capacity()));
}

std::vector<codec::ContextRecord> drain(SharedRing& ring, pipeline::ContextChannel& channel, std::uint64_t* events) {
  ProcessWatch watch;
  watch.all_exited.store(true);
  analysis::LiveHeap heap;
  SeenProcesses processes;
  RingReader reader(ring, watch, processes, heap, nullptr);
  Lifecycle lifecycle(channel, nullptr);
  reader.set_lifecycle(&lifecycle);
  std::vector<codec::Event> buf(16);
  while (reader.read(buf) != 0) {
  }
  *events = reader.events();
  std::vector<std::byte> frame;
  EXPECT_TRUE(channel.take_frame(frame).is_ok());
  std::vector<codec::ContextRecord> out;
  EXPECT_TRUE(codec::decode_context_frame(frame, 0, out).is_ok());
  return out;
}

TEST(LifecycleNotes, BecomeRecordsAtTheirEventPositions) {
  SharedRing ring(64);
  using namespace std::string_literals;
  ring.write_note(RingEventKind::NoteExec, 100, 1, 0, "/bin/exe\0exe\0-v\0"s);
  put_event(ring, 100, 0x1000, 10);
  put_event(ring, 100, 0x2000, 20);
  put_event(ring, 100, 0x3000, 30);
  ring.write_note(RingEventKind::NoteStart, 101, 100);
  put_event(ring, 101, 0x4000, 40);
  put_event(ring, 101, 0x5000, 50);
  ring.write_note(RingEventKind::NoteExit, 101, 7, kRingNoteHasStatus);
  ring.write_note(RingEventKind::NoteExit, 101, 9, kRingNoteSignal);  // reaped later: the first note counts
  const std::string long_path(500, 'x');                              // more than 8 data slots of 40 bytes
  ring.write_note(RingEventKind::NoteUntracked, 0, static_cast<std::uint64_t>(RingUntrackedReason::Static), 0,
                  long_path);
  ring.write_note(RingEventKind::NoteExit, 100, 9, kRingNoteSignal);

  pipeline::ContextChannel channel;
  std::uint64_t events = 0;
  const std::vector<codec::ContextRecord> got = drain(ring, channel, &events);
  EXPECT_EQ(events, 5u);
  const std::vector<codec::ContextRecord> want = {
      codec::ProcessStart{100, 1, 0, 0},
      codec::ProcessExec{100, 0, 0, "/bin/exe", {"exe", "-v"}},
      codec::ProcessStart{101, 100, 3, 0},
      codec::ProcessExit{101, 5, 0, 7, std::nullopt},
      codec::Untracked{std::nullopt, std::string(note_max_data_slots(64) * kNoteDataBytes, 'x'), "static", 5},
      codec::ProcessExit{100, 5, 0, std::nullopt, 9},
  };
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    // Timestamps are the recorder's clock at writing: compare everything else.
    codec::ContextRecord g = got[i];
    std::visit(
        [](auto& r) {
          if constexpr (requires { r.timestamp; }) r.timestamp = 0;
        },
        g);
    EXPECT_EQ(g, want[i]) << "record " << i;
  }
}

}  // namespace

namespace {

// A fork note for a pid still in the books: its previous process ended unnoticed (reaped by a tracked parent,
// the pid reused before the recorder looked), so it exits at that point and the new one starts.
TEST(LifecycleNotes, AReusedPidEndsTheProcessThatHadIt) {
  SharedRing ring(64);
  ring.write_note(RingEventKind::NoteStart, 200, 1);
  put_event(ring, 200, 0x1000, 10);
  ring.write_note(RingEventKind::NoteStart, 200, 150);
  pipeline::ContextChannel channel;
  std::uint64_t events = 0;
  std::vector<codec::ContextRecord> got = drain(ring, channel, &events);
  for (codec::ContextRecord& g : got)
    std::visit(
        [](auto& r) {
          if constexpr (requires { r.timestamp; }) r.timestamp = 0;
        },
        g);
  const std::vector<codec::ContextRecord> want = {
      codec::ProcessStart{200, 1, 0, 0},
      codec::ProcessExit{200, 1, 0, std::nullopt, std::nullopt},
      codec::ProcessStart{200, 150, 1, 0},
  };
  EXPECT_EQ(got, want);
}

}  // namespace
