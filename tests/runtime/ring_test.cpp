// The ring's helpers both sides share (memtrack/runtime/ring.h): the note-block writer and the pause toggle,
// on a ring in ordinary memory laid out as the recorder lays it out.
#include "memtrack/runtime/ring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace memtrack::runtime {
namespace {

class TestRing {
 public:
  explicit TestRing(std::uint64_t slots) : bytes_(new (std::align_val_t{64}) unsigned char[ring_bytes(slots)]) {
    header_ = new (bytes_.get()) RingHeader;
    header_->magic = kRingMagic;
    header_->version = kRingVersion;
    header_->capacity = slots;
    header_->timestamp_tsc = 0;
    header_->head.store(0);
    header_->detached.store(0);
    header_->control.store(0);
    header_->consumed.store(0);
    RingSlot* s = ring_slots(header_);
    for (std::uint64_t i = 0; i < slots; ++i) {
      new (&s[i].seq) std::atomic<std::uint64_t>(seq_word(i, i, slots));  // 0: not committed
      new (&s[i].owner) std::atomic<std::uint64_t>(0);
    }
    std::atomic<std::uint64_t>* o = ring_owners(header_);
    for (std::uint64_t i = 0; i < 2 * slots; ++i) new (&o[i]) std::atomic<std::uint64_t>(0);
  }
  RingHeader* header() { return header_; }
  RingSlot& slot(std::uint64_t t) { return ring_slots(header_)[t & (header_->capacity - 1)]; }

  // The consumer's side: waits for ticket t, returns its slot's event bytes, then frees the slot (`consumed`,
  // the tickets taken in order).
  RingEvent take(std::uint64_t t) {
    RingSlot& s = slot(t);
    const std::uint64_t capacity = header_->capacity;
    while (s.seq.load(std::memory_order_acquire) != seq_word(t + 1, t, capacity)) std::this_thread::yield();
    const RingEvent e = s.event;
    header_->consumed.store(t + 1, std::memory_order_release);
    return e;
  }

 private:
  struct Free {
    void operator()(unsigned char* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<unsigned char[], Free> bytes_;
  RingHeader* header_;
};

constexpr auto kNeverWaits = [](std::uint64_t) {
  ADD_FAILURE() << "a free slot was waited for";
  return false;
};

std::string payload_of(const RingEvent& data) {
  RingNoteData d;
  std::memcpy(&d, &data, sizeof d);
  EXPECT_EQ(d.kind, RingEventKind::NoteData);
  return std::string(d.bytes, d.length);
}

TEST(RingNoteBlock, HeadThenDataSlotsInTicketOrder) {
  TestRing ring(64);
  const std::string payload(95, 'x');  // 40 + 40 + 15
  std::uint64_t last = 0;
  ASSERT_TRUE(write_note_block(ring.header(), RingEventKind::NoteExec, 11, 12, 13, 7, 0, payload.data(), payload.size(),
                               kNeverWaits, &last));
  EXPECT_EQ(last, 3u);
  EXPECT_EQ(ring.header()->head.load(), 4u);
  const RingEvent head = ring.take(0);
  EXPECT_EQ(head.kind, RingEventKind::NoteExec);
  EXPECT_EQ(head.pid, 11);
  EXPECT_EQ(head.tid, 12);
  EXPECT_EQ(head.addr, 7u);
  EXPECT_EQ(head.size, 95u);
  EXPECT_EQ(head.old_addr, 3u);
  EXPECT_EQ(head.flags, 0);
  EXPECT_EQ(ring.slot(0).owner.load(), slot_owner(0, 13));
  std::string joined;
  for (std::uint64_t t = 1; t <= 3; ++t) {
    joined += payload_of(ring.take(t));
    EXPECT_EQ(ring.slot(t).owner.load(), slot_owner(t, 13));
  }
  EXPECT_EQ(joined, payload);
}

TEST(RingNoteBlock, PayloadIsCutToTheBlockLimit) {
  TestRing ring(64);  // note_max_data_slots(64) == 8
  const std::string payload(1000, 'p');
  std::uint64_t last = 0;
  ASSERT_TRUE(write_note_block(ring.header(), RingEventKind::NoteUntracked, 1, 1, 1, 0, 0, payload.data(),
                               payload.size(), kNeverWaits, &last));
  const RingEvent head = ring.take(0);
  EXPECT_EQ(head.old_addr, 8u);
  EXPECT_EQ(head.size, 8 * kNoteDataBytes);
  EXPECT_EQ(head.flags, kRingNoteTruncated);
  EXPECT_EQ(last, 8u);
}

TEST(RingNoteBlock, DetachedRingTakesNoTicket) {
  TestRing ring(64);
  ring.header()->detached.store(kDetachedFailed);
  std::uint64_t last = 99;
  EXPECT_FALSE(write_note_block(ring.header(), RingEventKind::NoteExit, 1, 1, 1, 0, 0, nullptr, 0, kNeverWaits, &last));
  EXPECT_EQ(ring.header()->head.load(), 0u);
  EXPECT_EQ(last, 99u);
}

TEST(RingNoteBlock, AWaitThatGivesUpStopsTheBlockAfterSigningTheOwners) {
  TestRing ring(64);
  ring.header()->head.store(64);  // ticket 64's slot is free once ticket 0 is consumed: not yet
  std::uint64_t last = 0;
  int waits = 0;
  EXPECT_FALSE(write_note_block(
      ring.header(), RingEventKind::NoteStart, 1, 1, 5, 0, 0, nullptr, 0,
      [&](std::uint64_t t) {
        EXPECT_EQ(t, 64u);
        ++waits;
        return false;
      },
      &last));
  EXPECT_EQ(waits, 1);
  EXPECT_EQ(ring_owners(ring.header())[64].load(), slot_owner(64, 5));
  EXPECT_EQ(ring.slot(64).seq.load(), 0u);  // nothing published
}

// A writer on a ring far smaller than its blocks' total waits for the consumer, and every block arrives
// whole and in order.
TEST(RingNoteBlock, WaitsForTheConsumerOnASmallRing) {
  TestRing ring(64);
  constexpr int kNotes = 200;
  std::thread writer([&] {
    for (int i = 0; i < kNotes; ++i) {
      const std::string payload(static_cast<std::size_t>(i % 120), static_cast<char>('a' + i % 26));
      std::uint64_t last = 0;
      ASSERT_TRUE(write_note_block(
          ring.header(), RingEventKind::NoteRegionBegin, i, 0, 1, 0, 0, payload.data(), payload.size(),
          [&](std::uint64_t t) {
            while (!slot_free(ring.header(), t)) std::this_thread::yield();
            return true;
          },
          &last));
    }
  });
  std::uint64_t t = 0;
  for (int i = 0; i < kNotes; ++i) {
    const RingEvent head = ring.take(t++);
    ASSERT_EQ(head.pid, i);
    std::string joined;
    for (std::uint64_t j = 0; j < head.old_addr; ++j) joined += payload_of(ring.take(t++));
    EXPECT_EQ(joined, std::string(static_cast<std::size_t>(i % 120), static_cast<char>('a' + i % 26)));
  }
  writer.join();
}

TEST(RingControl, ToggleBumpsTheGenerationAndIgnoresTheSameState) {
  TestRing ring(64);
  EXPECT_EQ(toggle_control(ring.header(), false), 0u);  // already recording
  const std::uint64_t paused = toggle_control(ring.header(), true);
  EXPECT_EQ(paused, next_control(0, true));
  EXPECT_EQ(control_generation(paused), 1u);
  EXPECT_EQ(toggle_control(ring.header(), true), 0u);
  const std::uint64_t resumed = toggle_control(ring.header(), false);
  EXPECT_EQ(control_generation(resumed), 2u);
  EXPECT_EQ(resumed & kRingControlPaused, 0u);
  EXPECT_EQ(ring.header()->control.load(), resumed);
}

// Threads toggling at once: every successful toggle has its own generation, and the last one is the word.
TEST(RingControl, RacingTogglesEachGetTheirOwnGeneration) {
  TestRing ring(64);
  constexpr int kThreads = 4, kToggles = 1000;
  std::vector<std::vector<std::uint64_t>> words(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < kToggles; ++k)
        if (const std::uint64_t w = toggle_control(ring.header(), (k + i) % 2 == 0); w != 0) words[i].push_back(w);
    });
  for (auto& th : threads) th.join();
  std::vector<bool> seen;
  std::uint64_t max_generation = 0;
  for (const auto& ws : words)
    for (std::uint64_t w : ws) {
      const std::uint64_t g = control_generation(w);
      if (g >= seen.size()) seen.resize(g + 1);
      EXPECT_FALSE(seen[g]) << "generation " << g << " taken twice";
      seen[g] = true;
      max_generation = std::max(max_generation, g);
    }
  EXPECT_EQ(control_generation(ring.header()->control.load()), max_generation);
}

}  // namespace
}  // namespace memtrack::runtime
