// Call stacks under `memtrack record` (docs/RUNTIME.md, "Call stacks"; docs/FORMAT.md, "Context section: stacks
// and modules"): programs with known call chains (tests/integration/programs/stacks.c with a shared library
// and a dlopen'd module, threads, a fork child, a signal handler, recursion past the depth cap, dlclose, exec;
// stacks_cxx.cpp for demangled names and an inlined frame) are recorded, and each allocation's stack is
// resolved from the artifact alone: EventStacks -> StackNodes -> Module -> Symbols, read with the codec's own
// readers. The functions of each stack are asserted in order, innermost first.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "artifact_context.h"
#include "memtrack/codec/artifact_decoder.h"
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/context.h"

namespace {

namespace fs = std::filesystem;
using namespace memtrack::codec;

const std::string kMemtrack = MEMTRACK_BIN_DIR "/memtrack";
const std::string kPrograms = MEMTRACK_PROGRAMS_DIR;

fs::path scratch_dir() {
  char tmpl[] = "/tmp/memtrack-stacks-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  if (d == nullptr) throw std::runtime_error("mkdtemp");
  return d;
}

std::vector<std::byte> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

template <typename T>
T le(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct Artifact {
  std::vector<Event> events;
  std::vector<ContextRecord> context;  // in file order
  std::vector<std::uint64_t> data_frame_bytes;
};

// Events through ArtifactDecoder; context frames by walking the frame index (artifact_context.h).
Artifact read_artifact(const fs::path& path) {
  Artifact a;
  const std::vector<std::byte> bytes = slurp(path);
  MemorySource source(bytes);
  ArtifactDecoder decoder(source, path.string());
  std::vector<Event> buf(4096);
  while (const std::size_t n = decoder.next(buf)) a.events.insert(a.events.end(), buf.begin(), buf.begin() + n);
  EXPECT_TRUE(decoder.status().is_ok()) << decoder.status().message();
  memtrack::testing_integration::ArtifactFrames frames = memtrack::testing_integration::read_artifact_frames(bytes);
  a.context = std::move(frames.context);
  a.data_frame_bytes = std::move(frames.data_frame_bytes);
  return a;
}

struct Frame {
  std::string function, file;
  std::uint32_t line = 0;
};

// The stacks of an artifact, resolved as a reader of the format would.
class Stacks {
 public:
  explicit Stacks(const Artifact& a) : a_(a) {
    std::map<std::int32_t, int> image;  // pid -> its current image number
    for (const ContextRecord& r : a.context) {
      if (const auto* s = std::get_if<ProcessStart>(&r)) {
        // A fork child starts with a copy of its parent's tables: resolved through the parent's image.
        if (image.count(s->ppid) != 0) parent_[{s->pid, 0}] = {s->ppid, image[s->ppid]};
        image[s->pid] = 0;
        exec_events_.erase(s->pid);
      } else if (const auto* e = std::get_if<ProcessExec>(&r)) {
        // A new image: its own tree and modules, for the pid's events from e->event on.
        exec_events_[e->pid].push_back({e->event, ++image[e->pid]});
      } else if (const auto* n = std::get_if<StackNodes>(&r)) {
        auto& t = images_[{n->pid, image[n->pid]}];
        for (std::size_t i = 0; i < n->parents.size(); ++i)
          t.nodes[n->first_id + static_cast<std::uint32_t>(i)] = {n->parents[i], n->addresses[i]};
      } else if (const auto* m = std::get_if<Module>(&r)) {
        images_[{m->pid, image[m->pid]}].modules.push_back(*m);
        modules_.push_back(*m);
      } else if (const auto* s2 = std::get_if<Symbols>(&r)) {
        auto& table = symbols_[{s2->path, s2->build_id}];
        std::size_t k = 0;
        for (std::size_t i = 0; i < s2->addresses.size(); ++i) {
          std::vector<Frame>& frames = table[s2->addresses[i]];
          for (std::uint32_t d = 0; d < s2->depths[i]; ++d, ++k) {
            Frame f;
            if (s2->functions[k] != kNoString) f.function = s2->strings[s2->functions[k]];
            if (s2->files[k] != kNoString) f.file = s2->strings[s2->files[k]];
            f.line = s2->lines[k];
            frames.push_back(f);
          }
        }
      } else if (const auto* es = std::get_if<EventStacks>(&r)) {
        for (std::size_t i = 0; i < es->ids.size(); ++i) ids_[es->first_event + i] = es->ids[i];
      }
    }
  }

  [[nodiscard]] std::uint32_t id_of(std::size_t event) const {
    const auto it = ids_.find(event);
    return it == ids_.end() ? 0 : it->second;
  }
  [[nodiscard]] bool has_ids_for_all_events() const { return ids_.size() == a_.events.size(); }
  [[nodiscard]] const std::vector<Module>& modules() const { return modules_; }

  // The frames of event `i`, innermost first: each return address's frames (inlined first), "?" for an
  // address nothing resolved, "[truncated]" for the pseudo-node.
  [[nodiscard]] std::vector<Frame> frames_of(std::size_t i) const {
    const Event& e = a_.events[i];
    Key image{e.pid, image_at(e.pid, i)};
    std::vector<Frame> out;
    std::uint32_t id = id_of(i);
    for (int guard = 0; id != 0 && guard < 1000; ++guard) {
      const Node* n = find_node(image, id);
      if (n == nullptr) {
        out.push_back({"<undefined node " + std::to_string(id) + ">", "", 0});
        break;
      }
      if (n->address == kTruncatedStackAddress) {
        out.push_back({"[truncated]", "", 0});
      } else {
        const std::vector<Frame>* frames = symbolize(image, n->address);
        if (frames == nullptr || frames->empty())
          out.push_back({"?", "", 0});
        else
          out.insert(out.end(), frames->begin(), frames->end());
      }
      id = n->parent;
    }
    return out;
  }

  [[nodiscard]] std::vector<std::string> functions_of(std::size_t i) const {
    std::vector<std::string> names;
    for (const Frame& f : frames_of(i)) names.push_back(f.function);
    return names;
  }

 private:
  using Key = std::pair<std::int32_t, int>;
  struct Node {
    std::uint32_t parent = 0;
    std::uint64_t address = 0;
  };
  struct Image {
    std::map<std::uint32_t, Node> nodes;
    std::vector<Module> modules;
  };

  int image_at(std::int32_t pid, std::size_t event) const {
    int image = 0;
    const auto it = exec_events_.find(pid);
    if (it == exec_events_.end()) return image;
    for (const auto& [at, number] : it->second) {
      if (at <= event) image = number;
    }
    return image;
  }
  const Node* find_node(Key image, std::uint32_t id) const {
    for (int guard = 0; guard < 64; ++guard) {
      if (const auto it = images_.find(image); it != images_.end())
        if (const auto n = it->second.nodes.find(id); n != it->second.nodes.end()) return &n->second;
      const auto p = parent_.find(image);
      if (p == parent_.end()) return nullptr;
      image = p->second;
    }
    return nullptr;
  }
  const std::vector<Frame>* symbolize(Key image, std::uint64_t address) const {
    for (int guard = 0; guard < 64; ++guard) {
      if (const auto it = images_.find(image); it != images_.end()) {
        for (auto m = it->second.modules.rbegin(); m != it->second.modules.rend(); ++m) {
          if (!m->loaded || address < m->start || address >= m->end) continue;
          const auto t = symbols_.find({m->path, m->build_id});
          if (t == symbols_.end()) return nullptr;
          const auto f = t->second.find(address - m->bias);
          return f == t->second.end() ? nullptr : &f->second;
        }
      }
      const auto p = parent_.find(image);
      if (p == parent_.end()) return nullptr;
      image = p->second;
    }
    return nullptr;
  }

  const Artifact& a_;
  std::map<Key, Image> images_;
  std::map<Key, Key> parent_;
  std::map<std::int32_t, std::vector<std::pair<std::uint64_t, int>>> exec_events_;
  std::map<std::pair<std::string, std::vector<std::uint8_t>>, std::map<std::uint64_t, std::vector<Frame>>> symbols_;
  std::map<std::uint64_t, std::uint32_t> ids_;
  std::vector<Module> modules_;
};

struct Ran {
  int status = -1;
  std::string err;
};

Ran run(const std::vector<std::string>& argv, const std::vector<std::string>& env_extra, const fs::path& dir) {
  const fs::path err = dir / "stderr.txt";
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const std::string& e : env_extra) ::putenv(const_cast<char*>(e.c_str()));
    if (std::freopen(err.c_str(), "w", stderr) == nullptr) ::_exit(126);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  Ran r;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(err);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  return r;
}

// Events of the program of one size (and pid, if given).
std::vector<std::size_t> events_of_size(const Artifact& a, std::uint64_t size, EventKind kind = EventKind::Malloc) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < a.events.size(); ++i)
    if (a.events[i].kind == kind && a.events[i].size == size) out.push_back(i);
  return out;
}

// The first names of a stack.
std::vector<std::string> head(const std::vector<std::string>& names, std::size_t n) {
  return {names.begin(), names.begin() + static_cast<std::ptrdiff_t>(std::min(n, names.size()))};
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : " <- ") + n;
  return s;
}

class StacksRecord : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(scratch_dir());
    // The dlopen'd module is a copy, deleted after the recording: the artifact must not need it.
    fs::copy_file(kPrograms + "/stacks_dl.so", *dir_ / "stacks_dl.so");
    const fs::path out = *dir_ / "a.msgpack";
    run_ = new Ran(run(
        {kMemtrack, "record", "-q", "-o", out.string(), "--", kPrograms + "/stacks", (*dir_ / "stacks_dl.so").string()},
        {}, *dir_));
    fs::remove(*dir_ / "stacks_dl.so");
    artifact_ = new Artifact(read_artifact(out));
    stacks_ = new Stacks(*artifact_);
  }
  static void TearDownTestSuite() {
    delete stacks_;
    delete artifact_;
    delete run_;
    fs::remove_all(*dir_);
    delete dir_;
  }

  // The one allocation of `size` and its functions.
  static std::vector<std::string> only(std::uint64_t size) {
    const std::vector<std::size_t> at = events_of_size(*artifact_, size);
    EXPECT_EQ(at.size(), 1u) << "allocations of " << size;
    if (at.empty()) return {};
    EXPECT_NE(stacks_->id_of(at[0]), 0u) << "allocation of " << size << " has no stack";
    return stacks_->functions_of(at[0]);
  }

  static fs::path* dir_;
  static Ran* run_;
  static Artifact* artifact_;
  static Stacks* stacks_;
};
fs::path* StacksRecord::dir_ = nullptr;
Ran* StacksRecord::run_ = nullptr;
Artifact* StacksRecord::artifact_ = nullptr;
Stacks* StacksRecord::stacks_ = nullptr;

using Names = std::vector<std::string>;

TEST_F(StacksRecord, RecordsAndEveryEventHasAnEntry) {
  ASSERT_EQ(run_->status, 0) << run_->err;
  EXPECT_TRUE(stacks_->has_ids_for_all_events());
  // Frees carry no stack.
  for (std::size_t i = 0; i < artifact_->events.size(); ++i) {
    if (artifact_->events[i].kind == EventKind::Free) {
      EXPECT_EQ(stacks_->id_of(i), 0u) << "free " << i;
    }
  }
}

TEST_F(StacksRecord, ThroughTheExecutable) {
  const Names f = only(1001);
  EXPECT_EQ(head(f, 4), (Names{"chain_c", "chain_b", "chain_a", "main"})) << joined(f);
}

TEST_F(StacksRecord, ThroughASharedLibrary) {
  const Names f = only(1002);
  EXPECT_EQ(head(f, 3), (Names{"lib_inner", "lib_outer", "main"})) << joined(f);
}

TEST_F(StacksRecord, ThroughADlopenedModuleDeletedBeforeAnalysis) {
  const Names f = only(1003);
  EXPECT_EQ(head(f, 3), (Names{"dl_inner", "dl_outer", "main"})) << joined(f);
  // Its load and (after dlclose, at the next new stack) its unload are noted.
  int loaded = 0, unloaded = 0;
  for (const Module& m : stacks_->modules()) {
    if (!m.path.ends_with("/stacks_dl.so")) continue;
    if (m.loaded) {
      ++loaded;
    } else {
      ++unloaded;
    }
    EXPECT_FALSE(m.build_id.empty());
  }
  EXPECT_EQ(loaded, 1);
  EXPECT_EQ(unloaded, 1);
}

TEST_F(StacksRecord, OnAnotherThread) {
  const Names f = only(1004);
  EXPECT_EQ(head(f, 2), (Names{"thread_alloc", "thread_main"})) << joined(f);
}

TEST_F(StacksRecord, InAForkChild) {
  const std::vector<std::size_t> at = events_of_size(*artifact_, 1005);
  ASSERT_EQ(at.size(), 1u);
  const Names f = stacks_->functions_of(at[0]);
  EXPECT_EQ(head(f, 2), (Names{"child_alloc", "main"})) << joined(f);
  // Not the command's pid: the child resolved through the copy of its parent's tables.
  EXPECT_NE(artifact_->events[at[0]].pid, artifact_->events[events_of_size(*artifact_, 1001)[0]].pid);
}

TEST_F(StacksRecord, InASignalHandler) {
  const Names f = only(1006);
  ASSERT_GE(f.size(), 3u) << joined(f);
  EXPECT_EQ(head(f, 2), (Names{"signal_alloc", "on_signal"})) << joined(f);
  // Through the signal frame to the code that raised it.
  EXPECT_NE(std::find(f.begin() + 2, f.end(), "main"), f.end()) << joined(f);
}

TEST_F(StacksRecord, RecursionDeeperThanTheCapIsCutAndMarked) {
  const Names f = only(1007);
  ASSERT_EQ(f.size(), 129u) << joined(f);  // the default --stack-depth 128, then the pseudo-node
  for (std::size_t i = 0; i < 128; ++i) EXPECT_EQ(f[i], "recurse") << i;
  EXPECT_EQ(f[128], "[truncated]");
}

TEST_F(StacksRecord, AfterDlcloseAndAfterExec) {
  EXPECT_EQ(head(only(1008), 4), (Names{"chain_c", "chain_b", "chain_a", "main"}));
  // The image exec started has its own tree: same functions, resolved through its own Module records.
  EXPECT_EQ(head(only(1009), 4), (Names{"chain_c", "chain_b", "chain_a", "main"}));
}

TEST(StacksRecordOptions, StackDepthCapsAndNoStacksWritesNone) {
  const fs::path dir = scratch_dir();
  fs::copy_file(kPrograms + "/stacks_dl.so", dir / "stacks_dl.so");
  const Ran capped = run({kMemtrack, "record", "-q", "--stack-depth", "8", "-o", (dir / "c.msgpack").string(), "--",
                          kPrograms + "/stacks", (dir / "stacks_dl.so").string()},
                         {}, dir);
  ASSERT_EQ(capped.status, 0) << capped.err;
  const Artifact c = read_artifact(dir / "c.msgpack");
  const Stacks cs(c);
  const std::vector<std::size_t> deep = events_of_size(c, 1007);
  ASSERT_EQ(deep.size(), 1u);
  EXPECT_EQ(cs.functions_of(deep[0]).size(), 9u);
  const Names chain = cs.functions_of(events_of_size(c, 1001)[0]);
  EXPECT_EQ(head(chain, 4), (Names{"chain_c", "chain_b", "chain_a", "main"})) << joined(chain);

  const Ran none = run({kMemtrack, "record", "-q", "--no-stacks", "-o", (dir / "n.msgpack").string(), "--",
                        kPrograms + "/stacks", (dir / "stacks_dl.so").string()},
                       {}, dir);
  ASSERT_EQ(none.status, 0) << none.err;
  const Artifact n = read_artifact(dir / "n.msgpack");
  EXPECT_EQ(n.events.size(), c.events.size());
  for (const ContextRecord& r : n.context) {
    EXPECT_FALSE(std::holds_alternative<StackNodes>(r));
    EXPECT_FALSE(std::holds_alternative<EventStacks>(r));
    EXPECT_FALSE(std::holds_alternative<Symbols>(r));
    EXPECT_FALSE(std::holds_alternative<Module>(r));
  }
  fs::remove_all(dir);
}

TEST(StacksRecordOptions, StrippedLibraryIsNamedFromDynsym) {
  const fs::path dir = scratch_dir();
  fs::copy_file(kPrograms + "/stacks_dl.so", dir / "stacks_dl.so");
  const std::string libpath = "LD_LIBRARY_PATH=" + kPrograms + "/stripped";
  const Ran r = run({kMemtrack, "record", "-q", "-o", (dir / "s.msgpack").string(), "--", kPrograms + "/stacks",
                     (dir / "stacks_dl.so").string()},
                    {libpath}, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const Artifact a = read_artifact(dir / "s.msgpack");
  const Stacks s(a);
  bool stripped = false;
  for (const Module& m : s.modules()) stripped |= m.path.ends_with("/stripped/libstacks_lib.so");
  EXPECT_TRUE(stripped);
  const std::vector<Frame> f = s.frames_of(events_of_size(a, 1002)[0]);
  ASSERT_GE(f.size(), 3u);
  EXPECT_EQ(f[0].function, "lib_inner");
  EXPECT_EQ(f[1].function, "lib_outer");
  EXPECT_EQ(f[0].line, 0u);  // no DWARF: names only
  EXPECT_EQ(f[2].function, "main");
  fs::remove_all(dir);
}

// The trace tree's bound (docs/RUNTIME.md, "Call stacks": 4,194,303 nodes per process image), with
// programs/tree_fill: 2^DEPTH allocations whose stacks need about 2^DEPTH x (CHAIN + 1) nodes. The artifact's
// trees are read into vectors (Stacks' maps would take a second per million nodes).
struct TreeFill {
  Ran ran;
  std::size_t nodes = 0;                   // in StackNodes records
  std::vector<std::uint32_t> leaf_depths;  // the stack of each malloc(777), in event order: nodes to the root
  std::size_t distinct_leaves = 0;
};

TreeFill record_tree_fill(int depth, int chain) {
  const fs::path dir = scratch_dir();
  TreeFill t;
  t.ran = run({kMemtrack, "record", "--stack-depth", "256", "-o", (dir / "t.mt").string(), "--",
               kPrograms + "/tree_fill", std::to_string(depth), std::to_string(chain)},
              {}, dir);
  if (t.ran.status != 0) return t;
  const Artifact a = read_artifact(dir / "t.mt");
  fs::remove_all(dir);
  std::vector<std::uint32_t> parents(1, 0);  // by node id; one process image
  std::vector<std::uint32_t> ids(a.events.size(), 0);
  for (const ContextRecord& r : a.context) {
    if (const auto* n = std::get_if<StackNodes>(&r)) {
      if (parents.size() < n->first_id + n->parents.size()) parents.resize(n->first_id + n->parents.size(), 0);
      for (std::size_t i = 0; i < n->parents.size(); ++i) parents[n->first_id + i] = n->parents[i];
      t.nodes += n->parents.size();
    } else if (const auto* es = std::get_if<EventStacks>(&r)) {
      for (std::size_t i = 0; i < es->ids.size() && es->first_event + i < ids.size(); ++i)
        ids[es->first_event + i] = es->ids[i];
    }
  }
  std::vector<std::uint32_t> leaves;
  for (const std::size_t i : events_of_size(a, 777)) {
    std::uint32_t d = 0;
    for (std::uint32_t id = ids[i]; id != 0 && id < parents.size() && d < 1000; id = parents[id]) ++d;
    t.leaf_depths.push_back(d);
    leaves.push_back(ids[i]);
  }
  std::sort(leaves.begin(), leaves.end());
  t.distinct_leaves = static_cast<std::size_t>(std::unique(leaves.begin(), leaves.end()) - leaves.begin());
  return t;
}

TEST(StacksTree, MoreThanAMillionNodesInOneProcessAndNoStackCut) {
  // 8,192 leaves x 201 chain frames: about 1.68M nodes, past the old bound (1,048,575).
  const TreeFill t = record_tree_fill(13, 200);
  ASSERT_EQ(t.ran.status, 0) << t.ran.err;
  EXPECT_EQ(t.ran.err.find("the trace tree is full"), std::string::npos) << t.ran.err;
  EXPECT_GT(t.nodes, 1'600'000u);
  ASSERT_EQ(t.leaf_depths.size(), 8192u);
  EXPECT_EQ(t.distinct_leaves, 8192u);
  // Every stack whole: as deep as the first (2 x 13 + 1 branch frames, 201 chain frames, main and the C
  // library's start), none cut to a prefix.
  EXPECT_GE(t.leaf_depths[0], 229u);
  EXPECT_LE(t.leaf_depths[0], 256u);
  for (std::size_t i = 0; i < t.leaf_depths.size(); ++i) ASSERT_EQ(t.leaf_depths[i], t.leaf_depths[0]) << "leaf " << i;
}

TEST(StacksTree, PastTheBoundStacksAreCutToAKnownPrefixAndSaidSo) {
  // 32,768 leaves x 161 chain frames: about 5.3M nodes wanted.
  const TreeFill t = record_tree_fill(15, 160);
  ASSERT_EQ(t.ran.status, 0) << t.ran.err;
  EXPECT_NE(t.ran.err.find("the trace tree is full (4,194,303 nodes): from here on a stack with frames not in it is "
                           "cut to its longest known prefix"),
            std::string::npos)
      << t.ran.err;
  // The tree full up to less than one leaf's new nodes (a stack that does not fit adds none of them).
  EXPECT_LE(t.nodes, 4'194'303u);
  EXPECT_GT(t.nodes, 4'194'303u - (2 * 15 + 161 + 8));
  ASSERT_EQ(t.leaf_depths.size(), 32768u);
  const std::uint32_t whole = t.leaf_depths[0];
  EXPECT_GE(whole, 2u * 15 + 1 + 161);
  // The leaves interned before the tree filled are whole; after it, cut (shorter, still ending at the root).
  std::size_t cut = 0;
  for (const std::uint32_t d : t.leaf_depths) {
    EXPECT_LE(d, whole);
    cut += d < whole;
  }
  EXPECT_GT(cut, 32768u / 10);
  EXPECT_LT(cut, 32768u / 2);
  EXPECT_LT(t.leaf_depths.back(), whole);
}

// `memtrack record -q` of test program `program`, its artifact read back (the scratch directory removed).
Artifact record_quietly(const std::string& program) {
  const fs::path dir = scratch_dir();
  const Ran r =
      run({kMemtrack, "record", "-q", "-o", (dir / "a.mt").string(), "--", kPrograms + "/" + program}, {}, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  Artifact a = r.status == 0 ? read_artifact(dir / "a.mt") : Artifact{};
  fs::remove_all(dir);
  return a;
}

TEST(StacksTree, AParentWithHundredsOfChildrenFindsEachOfThemAgain) {
  // tree_fanout.c: one indirect call site reaching 320 leaves, each allocating 2000 + its number bytes, in two
  // rounds. The call site's node has 320 children: more than its line of hash slots holds, so most go to
  // overflow slots; the second round must find every one of them again (the same node, no new ones).
  const Artifact a = record_quietly("tree_fanout");
  ASSERT_FALSE(a.events.empty());
  const Stacks s(a);
  std::vector<std::uint32_t> leaves;
  for (int digit1 = 1; digit1 <= 5; ++digit1)
    for (int digit2 = 0; digit2 < 8; ++digit2)
      for (int digit3 = 0; digit3 < 8; ++digit3) {
        const int n = digit1 * 100 + digit2 * 10 + digit3;
        const std::vector<std::size_t> at = events_of_size(a, 2000 + static_cast<std::uint64_t>(n));
        ASSERT_EQ(at.size(), 2u) << n;
        const std::uint32_t id = s.id_of(at[0]);
        ASSERT_NE(id, 0u) << n;
        EXPECT_EQ(s.id_of(at[1]), id) << "leaf " << n << ": the second round's stack is another node";
        const Names f = s.functions_of(at[0]);
        ASSERT_GE(f.size(), 3u) << n;
        EXPECT_EQ(f[0], "leaf_" + std::to_string(n)) << joined(f);
        EXPECT_EQ(f[1], "call") << joined(f);
        EXPECT_EQ(f[2], "main") << joined(f);
        leaves.push_back(id);
      }
  std::sort(leaves.begin(), leaves.end());
  EXPECT_EQ(std::unique(leaves.begin(), leaves.end()), leaves.end()) << "two leaves share a node";
  // A lookup that missed a node the tree holds would note a twin of it (insert finds the node and keeps it, but
  // the new id was taken and noted): no (parent, address) pair is noted twice.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> noted;
  for (const ContextRecord& rec : a.context)
    if (const auto* n = std::get_if<StackNodes>(&rec))
      for (std::size_t i = 0; i < n->parents.size(); ++i) noted.emplace_back(n->parents[i], n->addresses[i]);
  EXPECT_GT(noted.size(), 320u);
  std::sort(noted.begin(), noted.end());
  EXPECT_EQ(std::adjacent_find(noted.begin(), noted.end()), noted.end()) << "a node noted twice";
}

TEST(StacksRecordCxx, DemangledNamesAndAnInlinedFrame) {
  const Artifact a = record_quietly("stacks_cxx");
  ASSERT_FALSE(a.events.empty());
  const Stacks s(a);
  const std::vector<std::size_t> made = events_of_size(a, 2001 * sizeof(int));
  ASSERT_EQ(made.size(), 1u);
  const Names f = s.functions_of(made[0]);
  const auto box = std::find(f.begin(), f.end(), "shapes::Box<int>::make(unsigned long)");
  ASSERT_NE(box, f.end()) << joined(f);
  EXPECT_EQ(*(box + 1), "main") << joined(f);
  // The C++ operators are interposed by the preload (docs/RUNTIME.md, "Allocators beyond glibc"), so the
  // innermost frame is the program's caller of new[], not libstdc++'s operator new.
  EXPECT_EQ(f.front(), "shapes::Box<int>::make(unsigned long)") << joined(f);

  // The inlined function's own frame, at the malloc's line, then the function it was inlined into.
  const std::vector<Frame> g = s.frames_of(events_of_size(a, 2002)[0]);
  ASSERT_GE(g.size(), 3u);
  std::ifstream src(MEMTRACK_STACKS_SOURCE);
  std::string line;
  std::uint32_t inlined_line = 0;
  for (std::uint32_t n = 1; std::getline(src, line); ++n)
    if (line.find("// INLINED_LINE") != std::string::npos) inlined_line = n;
  EXPECT_EQ(g[0].function, "shapes::inlined_alloc(unsigned long)");
  EXPECT_TRUE(g[0].file.ends_with("stacks_cxx.cpp")) << g[0].file;
  EXPECT_EQ(g[0].line, inlined_line);
  EXPECT_EQ(g[1].function, "shapes::holder(unsigned long)");
  EXPECT_EQ(g[2].function, "main");
}

// The unwinder's fallback (libunwind) for a frame without a compact rule is loaded at the program's first
// dlopen, not at startup (docs/RUNTIME.md, "Call stacks"): before it such a frame ends its stack, said once in
// the summary; after it the same chain unwinds through it to main.
TEST(StacksFallback, LibunwindIsLoadedAtTheFirstDlopen) {
  const fs::path dir = scratch_dir();
  const Ran r =
      run({kMemtrack, "record", "-o", (dir / "f.msgpack").string(), "--", kPrograms + "/stacks_fallback"}, {}, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("libunwind before dlopen: not mapped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("libunwind after dlopen: mapped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a frame without a compact unwind rule ends this stack"), std::string::npos) << r.err;
  const Artifact a = read_artifact(dir / "f.msgpack");
  const Stacks s(a);
  ASSERT_EQ(events_of_size(a, 1011).size(), 1u);
  ASSERT_EQ(events_of_size(a, 1012).size(), 1u);
  const Names before = s.functions_of(events_of_size(a, 1011)[0]);
  EXPECT_EQ(before, (Names{"fallback_alloc", "expr_frame"})) << joined(before);
  const Names after = s.functions_of(events_of_size(a, 1012)[0]);
  EXPECT_EQ(head(after, 4), (Names{"fallback_alloc", "expr_frame", "expr_outer", "main"})) << joined(after);
  fs::remove_all(dir);
}

}  // namespace
