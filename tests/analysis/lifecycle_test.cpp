// The lifecycle-aware live heap (live_heap.h, "Lifecycle") and Stats::add_context: events and context
// records fed directly, in position order, as a reader delivers them. Each scenario's numbers are worked out
// by hand in its comments; a random one is checked against a plain reference model written here (per-image
// std::maps, the global sum recomputed from scratch after every step).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "lifecycle_trace.h"
#include "memtrack/analysis/live_heap.h"
#include "memtrack/analysis/stats.h"
#include "memtrack/codec/context.h"

namespace memtrack::analysis {
namespace {

using codec::ContextRecord;
using codec::Event;
using codec::EventKind;
using testing::kMiB;
using testing::kRecorder;
using testing::position;
using testing::Trace;

// Feeds events in spans of `chunk`, each span after the records positioned before its end (what a reader
// does with the records that follow a data frame: the heap applies them at their place inside the span).
LiveHeap interleaved(const Trace& t, std::size_t chunk = 1) {
  LiveHeap heap;
  std::size_t r = 0;
  for (std::size_t i = 0; i < t.events.size(); i += chunk) {
    const std::size_t end = std::min(i + chunk, t.events.size());
    while (r < t.records.size() && position(t.records[r]) < end) heap.add_context(t.records[r++]);
    heap.add(std::span<const Event>(t.events).subspan(i, end - i));
  }
  for (; r < t.records.size(); ++r) heap.add_context(t.records[r]);
  return heap;
}

// Every record first, then every event in one span: the heap must wait for each record's position.
LiveHeap records_first(const Trace& t) {
  LiveHeap heap;
  for (const auto& r : t.records) heap.add_context(r);
  heap.add(t.events);
  return heap;
}

std::uint64_t leaked_bytes(const LiveHeap& h) {
  std::uint64_t sum = 0;
  for (const auto& [pid, p] : h.pids()) sum += p.live_bytes;
  return sum;
}

std::uint64_t unmatched(const LiveHeap& h) {
  std::uint64_t sum = 0;
  for (const auto& [pid, p] : h.pids()) sum += p.unmatched_frees;
  return sum;
}

// A shell (pid 10, holding 1000 bytes) runs 30 children one after another; each execs and holds 1 MiB until
// it exits. Alive together: the shell and one child, so the peak is 1000 + 1 MiB; without the records (the
// version-1 model) every child stays alive to the end: 1000 + 30 MiB.
TEST(Lifecycle, SequentialChildrenPeakIsOneChilds) {
  Trace t;
  t.start(10, kRecorder);
  t.exec(10, "/bin/sh", {"sh", "-c", "loop"});
  t.malloc(10, 0x1000, 1000);
  for (int i = 0; i < 30; ++i) {
    const std::int32_t pid = 100 + i;
    t.start(pid, 10);  // fork: inherits the shell's 1000 bytes, shared with it
    t.malloc(pid, 0x5000, 24);
    t.exec(pid, "/usr/bin/child", {"child", std::to_string(i)});
    t.malloc(pid, 0x10000, kMiB);
    t.exit(pid);
  }
  for (const LiveHeap& h : {interleaved(t), interleaved(t, 7), records_first(t)}) {
    EXPECT_EQ(h.total_peak_bytes(), 1000 + kMiB);
    EXPECT_EQ(h.total_live_bytes(), 1000u);  // the shell alone
    EXPECT_EQ(h.images().size(), 1u + 30 * 2);
    EXPECT_EQ(h.late_records(), 0u);
    EXPECT_EQ(h.pending_records(), 0u);
    // Each child's forked image: inherited 1000 + its own 24, all freed by its exec; its exec'd image leaks
    // the 1 MiB it exited with.
    const ProcessImage& forked = h.images()[1];
    EXPECT_EQ(forked.pid, 100);
    EXPECT_TRUE(forked.forked);
    EXPECT_EQ(forked.argv, (std::vector<std::string>{"sh", "-c", "loop"}));
    EXPECT_EQ(forked.inherited_bytes, 1000u);
    EXPECT_EQ(forked.freed_by_exec_bytes, 1024u);
    EXPECT_EQ(forked.heap.live_bytes, 0u);
    EXPECT_EQ(forked.end, ProcessImage::End::exec);
    const ProcessImage& child = h.images()[2];
    EXPECT_EQ(child.pid, 100);
    EXPECT_EQ(child.image, 1u);
    EXPECT_EQ(child.executable, "/usr/bin/child");
    EXPECT_EQ(child.heap.live_bytes, kMiB);
    EXPECT_EQ(child.end, ProcessImage::End::exit);
    EXPECT_EQ(child.exit_status, 0);
    EXPECT_EQ(leaked_bytes(h), 1000 + 30 * kMiB);
  }
  LiveHeap v1;
  v1.add(t.events);
  EXPECT_EQ(v1.total_peak_bytes(), 1000 + 30 * kMiB + 30 * 24);  // the children's 24 bytes before their exec too
  EXPECT_FALSE(v1.has_lifecycle());
}

// Four children with overlapping lives, each holding its own blocks:
//   a=1: +100        b=2: +200      a exits       c=3: +400, +50     b frees 200     d=4: +800     c exits
// alive sums:  100        300           200             600, 650          450           1250         850
// The peak is 1250 (b, c, d alive together: 0 + 450 + 800), and the parent holds nothing.
TEST(Lifecycle, ConcurrentChildrenPeakIsTheSumOfThoseAlive) {
  Trace t;
  t.start(50, kRecorder);
  t.exec(50, "/usr/bin/make", {"make", "-j4"});
  for (int pid : {1, 2, 3, 4}) t.start(pid, 50);
  t.malloc(1, 0x100, 100);
  t.malloc(2, 0x100, 200);
  t.exit(1);
  t.malloc(3, 0x100, 400);
  t.malloc(3, 0x200, 50);
  t.free(2, 0x100);
  t.malloc(4, 0x100, 800);
  t.exit(3);
  t.exit(2);
  t.exit(4);
  for (const LiveHeap& h : {interleaved(t), interleaved(t, 3), records_first(t)}) {
    EXPECT_EQ(h.total_peak_bytes(), 1250u);
    EXPECT_EQ(h.total_live_bytes(), 0u);
    EXPECT_EQ(leaked_bytes(h), 100u + 450 + 800);  // what each held when it exited
    EXPECT_EQ(h.images().size(), 5u);
    EXPECT_EQ(h.images()[1].argv, (std::vector<std::string>{"make", "-j4"}));  // forked, not exec'd
  }
  LiveHeap v1;
  v1.add(t.events);
  EXPECT_EQ(v1.total_peak_bytes(), 100u + 450 + 800);
}

// env env /bin/echo: each image leaks 500 bytes when it execs the next; only the last one's 100 are leaks.
// Each exec ends its image's heap, so the global peak is one image's 500.
TEST(Lifecycle, ExecChainLeaksAreTheLastImagesOnly) {
  Trace t;
  t.start(7, kRecorder);
  t.exec(7, "/usr/bin/env", {"env", "env", "/bin/echo", "hi"});
  t.malloc(7, 0x1000, 500);
  t.exec(7, "/usr/bin/env", {"env", "/bin/echo", "hi"});
  t.malloc(7, 0x1000, 500);  // the same address in a new address space: not a missed free
  t.exec(7, "/bin/echo", {"/bin/echo", "hi"});
  t.malloc(7, 0x2000, 100);
  t.exit(7, 0);
  for (const LiveHeap& h : {interleaved(t), records_first(t)}) {
    ASSERT_EQ(h.images().size(), 3u);  // the first Exec named the first image
    EXPECT_EQ(leaked_bytes(h), 100u);
    EXPECT_EQ(h.pids().at(7).live_count, 1u);
    EXPECT_EQ(h.images()[0].freed_by_exec_bytes, 500u);
    EXPECT_EQ(h.images()[1].freed_by_exec_bytes, 500u);
    EXPECT_EQ(h.images()[2].freed_by_exec_bytes, 0u);
    EXPECT_EQ(h.images()[2].executable, "/bin/echo");
    EXPECT_EQ(h.images()[2].image, 2u);
    EXPECT_EQ(h.total_peak_bytes(), 500u);
    EXPECT_EQ(h.pids().at(7).peak_bytes, 500u);
    EXPECT_EQ(h.pids().at(7).events, 3u);
  }
  LiveHeap v1;
  v1.add(t.events);
  EXPECT_EQ(leaked_bytes(v1), 600u);  // 500 replaced at 0x1000, plus 100
}

// A parent holds a (100) and b (200) and forks; the child frees both: no unmatched frees. The copies are
// counted once, by the parent, while it holds them:
//   fork: 300 | child frees a: 300 | child +50: 350 | parent frees b: the child's b counts: 350 |
//   child frees b: 150 | parent exits: its a leaves, the child is alone with 50.
TEST(Lifecycle, ForkChildFreesInheritedBlocks) {
  Trace t;
  t.start(20, kRecorder);
  t.malloc(20, 0xa000, 100);
  t.malloc(20, 0xb000, 200);
  t.start(21, 20);
  t.free(21, 0xa000);
  t.malloc(21, 0xc000, 50);
  t.free(20, 0xb000);
  t.free(21, 0xb000);
  t.exit(20);
  for (const LiveHeap& h : {interleaved(t), records_first(t)}) {
    EXPECT_EQ(unmatched(h), 0u);
    EXPECT_EQ(h.total_peak_bytes(), 350u);
    EXPECT_EQ(h.total_live_bytes(), 50u);
    const ProcessImage& child = h.images()[1];
    EXPECT_EQ(child.inherited_bytes, 300u);
    EXPECT_EQ(child.inherited_count, 2u);
    EXPECT_EQ(child.heap.live_bytes, 50u);
    EXPECT_EQ(child.heap.peak_bytes, 300u);          // its own books start with the inheritance
    EXPECT_EQ(h.images()[0].heap.live_bytes, 100u);  // the parent exited holding a: its leak
  }
  LiveHeap v1;
  v1.add(t.events);
  EXPECT_EQ(unmatched(v1), 2u);  // what issue 12 saw: the child's frees look lost
}

// The parent dies while the child still shares a block: from then on the child's copy counts.
TEST(Lifecycle, AParentsExitHandsSharedBlocksToTheChild) {
  Trace t;
  t.start(20, kRecorder);
  t.malloc(20, 0xa000, 100);
  t.start(21, 20);
  t.exit(20);
  t.malloc(21, 0xc000, 1);
  const LiveHeap h = interleaved(t);
  EXPECT_EQ(h.total_live_bytes(), 101u);
  EXPECT_EQ(h.total_peak_bytes(), 101u);
}

// A $(...) subshell: a fork child that exits without exec. What it inherited and never touched is its
// parent's (charged to the parent if the parent never frees it), not the child's leak; what it allocated, or
// reallocated or replaced from an inherited block, is its own.
//   parent: a 100, b 200, c 400, d 800 (1500) | fork: 1500, all shared | child frees a: 1500 (the parent's a)
//   | child reallocs b -> e 250: 1750 | child mallocs 30 at d (a missed free: replaces its copy of d): 1780
//   | child +50 at f: 1830 | parent frees c: the child's c counts now: 1830 | child exits holding e, d', f
//   (its own: 330) and c (inherited, untouched: 400): 1100 | parent frees b: 900 | parent exits: 0.
TEST(Lifecycle, AForkChildsInheritedBlocksAreNotItsLeaks) {
  Trace t;
  t.start(20, kRecorder);
  t.malloc(20, 0xa000, 100);
  t.malloc(20, 0xb000, 200);
  t.malloc(20, 0xc000, 400);
  t.malloc(20, 0xd000, 800);
  t.start(21, 20);
  t.free(21, 0xa000);
  t.realloc(21, 0xb000, 0xe000, 250);
  t.malloc(21, 0xd000, 30);
  t.malloc(21, 0xf000, 50);
  t.free(20, 0xc000);
  t.exit(21);
  t.free(20, 0xb000);
  t.exit(20);
  for (const LiveHeap& h : {interleaved(t), interleaved(t, 3), records_first(t)}) {
    ASSERT_EQ(h.images().size(), 2u);
    const ProcessImage& parent = h.images()[0];
    const ProcessImage& child = h.images()[1];
    EXPECT_EQ(child.end, ProcessImage::End::exit);
    EXPECT_EQ(child.inherited_bytes, 1500u);
    EXPECT_EQ(child.inherited_count, 4u);
    EXPECT_EQ(child.inherited_at_exit_bytes, 400u);  // c: the parent freed its copy, the child never touched it
    EXPECT_EQ(child.inherited_at_exit_count, 1u);
    EXPECT_EQ(child.heap.live_bytes, 250u + 30 + 50);  // its leaks: its own blocks only
    EXPECT_EQ(child.heap.live_count, 3u);
    EXPECT_EQ(child.heap.peak_bytes, 1500u);        // its books start with the inheritance
    EXPECT_EQ(parent.heap.live_bytes, 100u + 800);  // a and d: the parent's own leaks, counted once
    EXPECT_EQ(parent.inherited_at_exit_bytes, 0u);
    EXPECT_EQ(leaked_bytes(h), 100u + 800 + 330);
    EXPECT_EQ(h.total_peak_bytes(), 1830u);
    EXPECT_EQ(h.total_live_bytes(), 0u);
    EXPECT_EQ(unmatched(h), 0u);
  }
}

// Fork children of fork children: each image's inheritance is what its own parent held at its fork, the
// grandparent's blocks included.
TEST(Lifecycle, AGrandchildInheritsItsParentsOwnAndInheritedBlocks) {
  Trace t;
  t.start(30, kRecorder);
  t.malloc(30, 0x1000, 100);
  t.start(31, 30);
  t.malloc(31, 0x2000, 10);
  t.start(32, 31);
  t.malloc(32, 0x3000, 1);
  t.free(31, 0x1000);  // the child lets go of its copy: the grandchild's copy of it is still inherited
  t.exit(32);
  t.exit(31);
  t.exit(30);
  for (const LiveHeap& h : {interleaved(t), records_first(t)}) {
    ASSERT_EQ(h.images().size(), 3u);
    EXPECT_EQ(h.images()[2].inherited_bytes, 110u);
    EXPECT_EQ(h.images()[2].inherited_at_exit_bytes, 110u);
    EXPECT_EQ(h.images()[2].inherited_at_exit_count, 2u);
    EXPECT_EQ(h.images()[2].heap.live_bytes, 1u);
    EXPECT_EQ(h.images()[1].inherited_at_exit_bytes, 0u);  // it freed its copy
    EXPECT_EQ(h.images()[1].heap.live_bytes, 10u);
    EXPECT_EQ(h.images()[0].heap.live_bytes, 100u);
    EXPECT_EQ(leaked_bytes(h), 111u);
    EXPECT_EQ(h.total_peak_bytes(), 111u);
    EXPECT_EQ(h.total_live_bytes(), 0u);
  }
}

// A fork child that execs a static executable (the recorder's Untracked record just before the execve):
// its image ends as an exec (its blocks freed by it, not leaked), and the next row is the untracked image,
// which has no events and ends at the exit.
TEST(Lifecycle, AForkChildExecingAnUntrackableImageEndsLikeAnExec) {
  Trace t;
  t.start(40, kRecorder);
  t.exec(40, "/bin/sh", {"sh"});
  t.malloc(40, 0xa000, 100);
  t.malloc(40, 0xb000, 200);
  t.start(41, 40);
  t.free(41, 0xa000);
  t.malloc(41, 0xc000, 50);
  t.untracked(41, "/usr/bin/static_tool", "static");
  t.malloc(40, 0xd000, 7);
  t.exit(41, 3);
  t.exit(40);
  for (const LiveHeap& h : {interleaved(t), interleaved(t, 2), records_first(t)}) {
    ASSERT_EQ(h.images().size(), 3u);
    const ProcessImage& forked = h.images()[1];
    EXPECT_TRUE(forked.forked);
    EXPECT_EQ(forked.end, ProcessImage::End::exec);
    EXPECT_EQ(forked.freed_by_exec_bytes, 200u + 50);
    EXPECT_EQ(forked.freed_by_exec_count, 2u);
    EXPECT_EQ(forked.heap.live_bytes, 0u);
    EXPECT_EQ(forked.end_event, std::optional<std::uint64_t>(4));
    const ProcessImage& untracked = h.images()[2];
    EXPECT_EQ(untracked.pid, 41);
    EXPECT_EQ(untracked.image, 1u);
    EXPECT_EQ(untracked.ppid, std::optional<std::int32_t>(40));
    EXPECT_FALSE(untracked.forked);
    EXPECT_EQ(untracked.executable, "/usr/bin/static_tool");
    EXPECT_TRUE(untracked.argv.empty());
    EXPECT_EQ(untracked.untracked, "static");
    EXPECT_EQ(untracked.heap.events, 0u);
    EXPECT_EQ(untracked.end, ProcessImage::End::exit);
    EXPECT_EQ(untracked.exit_status, 3);
    EXPECT_EQ(untracked.heap.live_bytes, 0u);
    EXPECT_EQ(leaked_bytes(h), 307u);  // the parent's only
    EXPECT_EQ(h.total_peak_bytes(), 350u);
    EXPECT_EQ(h.total_live_bytes(), 0u);
  }
}

// An untracked image that execs a program memtrack tracks again (a static shell running a dynamic one): the
// Exec ends the untracked row (it has no events, but it is an image of its own) and starts a new one.
TEST(Lifecycle, AnExecAfterAnUntrackedImageIsANewImage) {
  Trace t;
  t.start(40, kRecorder);
  t.exec(40, "/bin/sh", {"sh"});
  t.malloc(40, 0xa000, 100);
  t.untracked(40, "/bin/static_sh", "static");
  t.exec(40, "/bin/true", {"true"});
  t.malloc(40, 0xb000, 1);
  t.exit(40);
  const LiveHeap h = interleaved(t);
  ASSERT_EQ(h.images().size(), 3u);
  EXPECT_EQ(h.images()[0].freed_by_exec_bytes, 100u);
  EXPECT_EQ(h.images()[1].untracked, "static");
  EXPECT_EQ(h.images()[1].end, ProcessImage::End::exec);
  EXPECT_EQ(h.images()[2].executable, "/bin/true");
  EXPECT_EQ(h.images()[2].image, 2u);
  EXPECT_TRUE(h.images()[2].untracked.empty());
  EXPECT_EQ(leaked_bytes(h), 1u);
}

// The Untracked records that do not name an image a tracked process execs: no pid (an image of unknown
// origin), or a process left running. They change no image; Stats lists them all, as before.
TEST(Lifecycle, OtherUntrackedRecordsChangeNoImage) {
  Trace t;
  t.start(50, kRecorder);
  t.malloc(50, 0xa000, 100);
  t.start(51, 50);
  t.malloc(51, 0xb000, 10);
  t.untracked(51, "/usr/bin/daemon", "left-running");
  t.records.push_back(codec::Untracked{std::nullopt, "/usr/bin/static_tool", "static", t.at()});
  t.untracked(99, "/usr/bin/static_tool", "static");  // a pid without an image (posix_spawn's child)
  t.malloc(51, 0xc000, 1);
  Stats s;
  for (const auto& r : t.records) s.add_context(r);
  s.add(t.events);
  ASSERT_EQ(s.heap.images().size(), 2u);
  EXPECT_EQ(s.heap.images()[1].end, ProcessImage::End::running);
  EXPECT_TRUE(s.heap.images()[1].untracked.empty());
  EXPECT_EQ(s.heap.images()[1].heap.live_bytes, 111u);
  EXPECT_EQ(s.context.untracked.size(), 3u);

  // An image's Untracked is still listed, and a pid's first image, with no events and nothing inherited
  // yet, is only named by it (as by an Exec).
  Trace u;
  u.start(60, kRecorder);
  u.untracked(60, "/usr/bin/static_tool", "setuid");
  u.exit(60);
  Stats named;
  for (const auto& r : u.records) named.add_context(r);
  named.add(u.events);
  ASSERT_EQ(named.heap.images().size(), 1u);
  EXPECT_EQ(named.heap.images()[0].executable, "/usr/bin/static_tool");
  EXPECT_EQ(named.heap.images()[0].untracked, "setuid");
  EXPECT_EQ(named.heap.images()[0].end, ProcessImage::End::exit);
  ASSERT_EQ(named.context.untracked.size(), 1u);
  EXPECT_EQ(named.context.untracked[0].reason, "setuid");
}

// Records after the events they position are applied late, and counted; records beyond the events wait.
TEST(Lifecycle, LateAndPendingRecordsAreCounted) {
  Trace t;
  t.start(5, kRecorder);
  t.malloc(5, 0x10, 10);
  t.exit(5);
  LiveHeap h;
  h.add(t.events);
  for (const auto& r : t.records) h.add_context(r);
  EXPECT_EQ(h.late_records(), 1u);  // the start at 0, given after event 0
  EXPECT_EQ(h.total_live_bytes(), 0u);
  LiveHeap p;
  p.add_context(codec::ProcessExit{5, 99, 0, 0, std::nullopt});
  p.add(t.events);
  EXPECT_EQ(p.pending_records(), 1u);
  EXPECT_EQ(p.total_live_bytes(), 10u);
}

// A copy taken mid-stream (with sharing links between parent and child) goes on exactly like the original.
TEST(Lifecycle, CopiesKeepTheirOwnLinks) {
  Trace t;
  t.start(20, kRecorder);
  t.malloc(20, 0xa000, 100);
  t.start(21, 20);
  const std::size_t cut = t.events.size();
  t.free(20, 0xa000);
  t.free(21, 0xa000);
  t.malloc(21, 0xb000, 7);
  t.exit(20);
  LiveHeap a;
  for (const auto& r : t.records) a.add_context(r);
  a.add(std::span<const Event>(t.events).first(cut));
  LiveHeap b = a;
  LiveHeap c;
  c = b;
  for (LiveHeap* h : {&a, &b, &c}) h->add(std::span<const Event>(t.events).subspan(cut));
  a = LiveHeap{};
  for (const LiveHeap* h : {&b, &c}) {
    EXPECT_EQ(h->total_live_bytes(), 7u);
    EXPECT_EQ(h->total_peak_bytes(), 100u);
    EXPECT_EQ(unmatched(*h), 0u);
  }
}

// The reference: images as plain maps, the rules of live_heap.h "Lifecycle" applied literally, the global
// sum recomputed from every alive image after each step (a block counts unless it is in the image's
// shared set, which is emptied when its parent image ends and loses an address when the parent drops it).
struct RefModel {
  struct Image {
    std::int32_t pid = 0;
    std::map<std::uint64_t, std::uint64_t> live;
    std::set<std::uint64_t> shared;
    std::set<std::uint64_t> inherited_held;  // inherited at the fork, not dropped by this image since
    int parent = -1;                         // index of the image it shares with
    bool alive = true;
    std::uint64_t events = 0, unmatched = 0, inherited = 0, inherited_at_exit = 0;
  };
  std::vector<Image> images;
  std::map<std::int32_t, int> current;
  std::uint64_t peak = 0;

  std::uint64_t total() const {
    std::uint64_t sum = 0;
    for (const Image& im : images)
      if (im.alive)
        for (const auto& [addr, size] : im.live)
          if (!im.shared.contains(addr)) sum += size;
    return sum;
  }
  void sample() { peak = std::max(peak, total()); }
  int image_of(std::int32_t pid) {
    if (!current.contains(pid)) {
      images.push_back({});
      images.back().pid = pid;
      current[pid] = static_cast<int>(images.size()) - 1;
    }
    return current[pid];
  }
  void drop(int i, std::uint64_t addr) {  // image i let go of addr
    images[i].live.erase(addr);
    images[i].shared.erase(addr);
    images[i].inherited_held.erase(addr);
    for (Image& c : images)
      if (c.alive && c.parent == i) c.shared.erase(addr);
  }
  void end(std::int32_t pid, bool by_exec) {
    if (!current.contains(pid)) return;
    const int i = current[pid];
    images[i].alive = false;
    if (by_exec) images[i].live.clear();
    // An exit: what it inherited and still holds unchanged is not its leak.
    for (const std::uint64_t addr : by_exec ? std::set<std::uint64_t>{} : images[i].inherited_held) {
      images[i].inherited_at_exit += images[i].live.at(addr);
      images[i].live.erase(addr);
    }
    for (Image& c : images)
      if (c.parent == i) {
        c.shared.clear();
        c.parent = -1;
      }
    current.erase(pid);
    sample();  // a parent's end can raise the sum: its children's shared copies count from now on
  }
  void exec(std::int32_t pid) {
    // An Exec on an image with no events and nothing inherited only names it (the first image).
    if (current.contains(pid) && images[current[pid]].events == 0 && images[current[pid]].inherited == 0) return;
    end(pid, true);
    image_of(pid);
  }
  void event(const Event& e) {
    const int i = image_of(e.pid);
    ++images[i].events;
    if (e.kind == EventKind::Free) {
      if (images[i].live.contains(e.addr))
        drop(i, e.addr);
      else
        ++images[i].unmatched;
    } else if (e.kind == EventKind::Malloc) {
      if (images[i].live.contains(e.addr)) drop(i, e.addr);
      images[i].live[e.addr] = e.size;
    }
    sample();
  }
  void fork(std::int32_t pid, std::int32_t ppid) {
    end(pid, false);
    const int p = current.contains(ppid) ? current[ppid] : -1;
    images.push_back({});
    Image& c = images.back();
    c.pid = pid;
    if (p >= 0) {
      c.live = images[p].live;
      for (const auto& [addr, size] : c.live) c.shared.insert(addr), c.inherited_held.insert(addr);
      c.parent = p;
      c.inherited = c.live.size();
    }
    current[pid] = static_cast<int>(images.size()) - 1;
  }
};

TEST(Lifecycle, RandomProcessTreesMatchAPlainModel) {
  std::mt19937_64 rng(12);
  for (int round = 0; round < 40; ++round) {
    Trace t;
    RefModel ref;
    std::vector<std::int32_t> alive = {2};
    t.start(2, kRecorder);
    ref.fork(2, kRecorder);
    std::int32_t next_pid = 3;
    for (int step = 0; step < 600 && !alive.empty(); ++step) {
      const std::int32_t pid = alive[rng() % alive.size()];
      const unsigned op = static_cast<unsigned>(rng() % 100);
      const std::uint64_t addr = 16 * (1 + rng() % 24);
      if (op < 45) {
        t.malloc(pid, addr, 1 + rng() % 1000);
      } else if (op < 85) {
        t.free(pid, addr);  // often unknown: unmatched frees are part of the check
      } else if (op < 91 && alive.size() < 6) {
        t.start(next_pid, pid);
        ref.fork(next_pid, pid);
        alive.push_back(next_pid++);
        continue;
      } else if (op < 95) {
        t.exec(pid, "/x", {"x"});
        ref.exec(pid);
        continue;
      } else {
        t.exit(pid);
        ref.end(pid, false);
        std::erase(alive, pid);
        continue;
      }
      ref.event(t.events.back());
    }
    for (const LiveHeap& h : {interleaved(t, 1 + round % 5), records_first(t)}) {
      ASSERT_EQ(h.total_peak_bytes(), ref.peak) << "round " << round;
      ASSERT_EQ(h.total_live_bytes(), ref.total()) << "round " << round;
      ASSERT_EQ(h.images().size(), ref.images.size()) << "round " << round;
      for (std::size_t i = 0; i < ref.images.size(); ++i) {
        const RefModel::Image& r = ref.images[i];
        std::uint64_t live = 0;
        for (const auto& [addr, size] : r.live) live += size;
        ASSERT_EQ(h.images()[i].pid, r.pid) << "round " << round << " image " << i;
        ASSERT_EQ(h.images()[i].heap.live_bytes, live) << "round " << round << " image " << i;
        ASSERT_EQ(h.images()[i].heap.live_count, r.live.size()) << "round " << round << " image " << i;
        ASSERT_EQ(h.images()[i].heap.events, r.events) << "round " << round << " image " << i;
        ASSERT_EQ(h.images()[i].heap.unmatched_frees, r.unmatched) << "round " << round << " image " << i;
        // A running image's unchanged copies of its parent's blocks: counted now, and not its leaks.
        std::uint64_t held = r.inherited_at_exit;
        if (r.alive)
          for (const std::uint64_t addr : r.inherited_held) held += r.live.at(addr);
        ASSERT_EQ(h.images()[i].inherited_at_exit_bytes, held) << "round " << round << " image " << i;
        ASSERT_EQ(h.images()[i].leaked_bytes(), r.alive ? live - held : live) << "round " << round << " image " << i;
      }
    }
  }
}

// Stats keeps the records the heap does not use, and says whether the stream is known to be whole.
TEST(Lifecycle, StatsKeepsTheContextAndJudgesCompleteness) {
  Trace t;
  t.start(3, kRecorder);
  t.malloc(3, 0x10, 5);
  t.exit(3);
  Stats s;
  s.add_context(codec::RecordingInfo{"0.2", {"prog"}, 1, 2, {"lifecycle"}, kRecorder});
  for (const auto& r : t.records) s.add_context(r);
  s.add(t.events);
  s.file.frames = 1;
  EXPECT_TRUE(s.has_context());
  EXPECT_EQ(s.context.recording->command, std::vector<std::string>{"prog"});
  EXPECT_EQ(s.complete(), false);  // context, but no End: cut short
  s.add_context(codec::StreamEnd{1, 1, true});
  EXPECT_EQ(s.complete(), true);
  s.context.end->events = 2;  // an End that disagrees with what was read
  EXPECT_EQ(s.complete(), false);
  s.context.end->events = 1;
  s.context.end->clean = false;
  EXPECT_EQ(s.complete(), false);

  Stats v1;
  v1.add(t.events);
  EXPECT_EQ(v1.complete(), std::nullopt);  // no context, no index: the writer left no mark
  v1.file.index_at_end = true;
  EXPECT_EQ(v1.complete(), true);
  v1.status = codec::Status(codec::Errc::truncated, "cut");
  EXPECT_EQ(v1.complete(), false);
}

}  // namespace
}  // namespace memtrack::analysis
