// The recorder's books of call stacks (docs/RUNTIME.md, "Call stacks"): the stack and module notes of the ring
// (ring.h, "Stack notes") become Module and StackNodes context records (docs/FORMAT.md, "Context section:
// stacks and modules") as the reader meets them, and are kept per process image so the recording's end can
// symbolize every address (symbols_writer.h). Also the per-frame EventStacks builder for the encoder.
//
// Thread safety: on_slot(), on_abandoned() and the image notes from the reader thread only; finish()
// after the reader has seen the last slot (the reader thread too). event_stacks_records() from any thread
// (it touches nothing here).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dense_ids.h"
#include "memtrack/codec/context.h"
#include "memtrack/codec/event.h"
#include "memtrack/pipeline/context_channel.h"
#include "memtrack/pipeline/stream_encoder.h"
#include "memtrack/runtime/ring.h"

namespace memtrack::runtime {

struct ModuleEntry {
  std::string path;
  std::vector<std::uint8_t> build_id;
  std::uint64_t bias = 0, start = 0, end = 0;
  bool loaded = true;
};

// A CPython code object of a Python pseudo-module (NotePythonCode, runtime/preload/python.h): the frames
// at pseudo-addresses module base + (id << 20 | (instruction index + 1)) are in it.
struct PythonCode {
  std::string name, file;
  std::uint32_t first_line = 0;
  std::string linetable;                              // co_linetable
  std::uint32_t table_format = kPythonLocationTable;  // its format (ring.h)
};
// Whether `m` is an image's Python pseudo-module ("[python]" at the preload's tag): its addresses are named
// from the PythonCode notes, not symbolized.
inline bool is_python_module(const ModuleEntry& m) { return m.path == "[python]" && (m.start >> 48) == 0x7079; }
// The line of code unit `index` of a code whose co_linetable is `table`, or 0 when it has none. `format`:
// kPythonLocationTable (3.11, 3.12 and 3.13: Objects/locations.md) or kPythonLineTable310 (3.10:
// Objects/lnotab_notes.txt, byte pairs of a bytecode delta in bytes and a signed line delta, -128 for none).
std::uint32_t python_line(std::string_view table, std::uint32_t first_line, std::uint64_t index,
                          std::uint32_t format = kPythonLocationTable);

// The lines of one code's units asked in increasing order, reading its table once (python_line reads it from
// the start at each call): a code's frames in the recording's symbol table, sorted by address, are its
// units in order. An index below the previous one starts again from the table's start.
// The cursor keeps a view of `table`: the table must outlive it.
class PythonLines {
 public:
  PythonLines(std::string_view table, std::uint32_t first_line, std::uint32_t format = kPythonLocationTable)
      : table_(table), first_line_(first_line), format_(format) {
    restart();
  }
  std::uint32_t line(std::uint64_t index);

 private:
  void restart() {
    i_ = 0;
    at_ = 0;
    length_ = 0;
    line_ = first_line_;
    none_ = true;
    ended_ = false;
  }
  // A hostile table's deltas may add up past 64 bits: they wrap (such a line is no line, as is one past 2^32).
  void move_line(std::int64_t delta) {
    line_ = static_cast<std::int64_t>(static_cast<std::uint64_t>(line_) + static_cast<std::uint64_t>(delta));
  }
  // Moves to the next entry (length_, line_, none_); false at the table's end or a malformed entry, which
  // ends it (length_ 0).
  bool next();

  std::string_view table_;
  std::uint32_t first_line_;
  std::uint32_t format_;
  std::size_t i_ = 0;         // the next entry's first byte
  std::uint64_t at_ = 0;      // the first code unit of the current entry
  std::uint64_t length_ = 0;  // its code units (0: no current entry)
  std::int64_t line_ = 0;
  bool none_ = true, ended_ = false;
};

// Node id -> return address (address 0 is no node). A std::map's node, about 48 bytes and an allocation each,
// was a third of the recorder's extra CPU with Python frames on pytest.
using NodeAddresses = DenseIds<std::uint64_t>;

// One process image's tables. A fork child's starts as a copy of its parent's at the fork.
struct ImageTables {
  std::int32_t pid = 0;
  NodeAddresses addresses;           // node id -> return address
  std::vector<ModuleEntry> modules;  // in note order; unloaded ones stay (loaded = false)

  // Notes a loaded module (appended to `modules`).
  void add_module(ModuleEntry module);
  // The module of `address`: the last noted one with a path whose range holds it (a range reused after a
  // dlclose belongs to the later module; stacks of the earlier one are rare and resolved as the later). Null
  // when no noted module holds it. O(log modules).
  [[nodiscard]] const ModuleEntry* module_of(std::uint64_t address) const;

  struct Span {
    std::uint64_t end;
    std::size_t module;  // index in `modules`
  };
  std::map<std::uint64_t, Span> spans;  // add_module's: start -> disjoint ranges, each the last module's over it
};

struct StackSummary {
  std::uint64_t nodes = 0;        // StackNodes entries received, all images
  std::uint64_t modules = 0;      // Module records
  std::uint64_t table_bytes = 0;  // the recorder's tables (addresses + modules), an estimate
  std::uint64_t images = 0;
};

class StackTables {
 public:
  explicit StackTables(pipeline::ContextChannel& channel) : channel_(channel) {}

  // Called on the reader thread once per stack note with its new nodes whose addresses lie in a noted module:
  // each one's module and module-relative address (symbols_writer.h symbolizes ahead from them). The module
  // pointers are valid during the call.
  struct NewAddress {
    const ModuleEntry* module;
    std::uint64_t relative;
  };
  using NewAddressesFn = std::function<void(std::span<const NewAddress>)>;
  void on_new_addresses(NewAddressesFn fn) { on_new_addresses_ = std::move(fn); }

  // True for the note kinds these books take (NoteStackNodes, NoteModule), whose NoteData slots follow.
  [[nodiscard]] static bool takes(RingEventKind kind) {
    return kind == RingEventKind::NoteStackNodes || kind == RingEventKind::NoteModule ||
           kind == RingEventKind::NotePythonCode;
  }
  // Reader thread: a head slot of one of our kinds, or one of its NoteData slots, at event position `position`.
  void on_slot(const RingEvent& slot, std::uint64_t position);
  // Reader thread: a slot of the current block skipped unfilled (its owner died): the block is dropped.
  void on_abandoned();
  // True while a block's data slots are still to come.
  [[nodiscard]] bool in_block() const { return note_.missing != 0; }

  // Lifecycle notes, seen by the reader as they pass: a fork child's tables start as its parent's copy, a
  // new image (NoteExec) starts empty.
  void on_fork(std::int32_t pid, std::int32_t ppid);
  void on_exec(std::int32_t pid);

  // Every image seen (replaced ones included), for symbolization.
  [[nodiscard]] const std::vector<ImageTables>& images() const { return images_; }
  // The current image's tables of `pid` (reader thread), or null when none was noted.
  [[nodiscard]] const ImageTables* current_of(std::int32_t pid) const {
    const auto it = current_.find(pid);
    return it == current_.end() ? nullptr : &images_[it->second];
  }
  [[nodiscard]] StackSummary summary() const;

  // The codes of the Python module (path, build id) by id, or null when none was noted.
  [[nodiscard]] const std::map<std::uint32_t, PythonCode>* python_codes(
      const std::string& path, const std::vector<std::uint8_t>& build_id) const {
    const auto m = python_codes_.find({path, build_id});
    return m == python_codes_.end() ? nullptr : &m->second;
  }

 private:
  struct Note {
    RingEvent head{};
    std::uint64_t position = 0;
    std::uint64_t missing = 0;
    std::string payload;
  };
  void finish_note();
  ImageTables& current(std::int32_t pid);

  pipeline::ContextChannel& channel_;
  NewAddressesFn on_new_addresses_;
  std::vector<NewAddress> new_addresses_;  // one note's, reused
  Note note_;
  std::vector<ImageTables> images_;
  std::map<std::int32_t, std::size_t> current_;  // pid -> its current image in images_
  std::uint64_t nodes_ = 0, modules_ = 0;
  // Per Python module (path, build id; a fork child shares its parent's): code id -> code.
  std::map<std::pair<std::string, std::vector<std::uint8_t>>, std::map<std::uint32_t, PythonCode>> python_codes_;
};

// The EventStacks records of one data frame (docs/FORMAT.md): the `stack` of every event, from the frame's
// first event on, split at the reader's bin limit (pipeline::FrameContextBuilder; thread-safe, no state).
codec::Status event_stacks_records(const pipeline::FrameContextInput& frame, std::vector<codec::ContextRecord>& out);

}  // namespace memtrack::runtime
