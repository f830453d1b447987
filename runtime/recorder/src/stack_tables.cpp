#include "stack_tables.h"

#include <cstring>
#include <iterator>
#include <utility>

namespace memtrack::runtime {

namespace {

template <typename T>
T load_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // x86_64 only (ring.h's producers): the bytes are little-endian already
  return v;
}

// Objects/locations.md (3.11): 6-bit groups, low first, bit 6 set when another follows.
std::uint64_t varint(std::string_view t, std::size_t& i) {
  std::uint64_t v = 0;
  for (unsigned shift = 0; i < t.size() && shift < 64; shift += 6) {
    const auto b = static_cast<std::uint8_t>(t[i++]);
    v |= static_cast<std::uint64_t>(b & 63) << shift;
    if ((b & 64) == 0) break;
  }
  return v;
}
std::int64_t svarint(std::string_view t, std::size_t& i) {
  const std::uint64_t u = varint(t, i);
  return (u & 1) != 0 ? -static_cast<std::int64_t>(u >> 1) : static_cast<std::int64_t>(u >> 1);
}

}  // namespace

bool PythonLines::next() {
  if (ended_) return false;
  at_ += length_;
  length_ = 0;
  const std::string_view t = table_;
  std::size_t& i = i_;
  if (i >= t.size()) {
    ended_ = true;
    return false;
  }
  if (format_ == kPythonLineTable310) {
    // A byte pair: the entry's length in bytes of bytecode (2 per code unit), the line's change (-128: no line).
    if (i + 2 > t.size()) {
      ended_ = true;
      return false;
    }
    const auto bytes = static_cast<std::uint8_t>(t[i]);
    const auto delta = static_cast<std::int8_t>(t[i + 1]);
    i += 2;
    length_ = bytes / 2u;
    none_ = delta == -128;
    if (!none_) move_line(delta);
    return true;
  }
  const auto b = static_cast<std::uint8_t>(t[i++]);
  if ((b & 0x80) == 0) {  // not an entry's first byte: a table cut short or not in this format
    ended_ = true;
    return false;
  }
  const unsigned code = (b >> 3) & 15;
  length_ = (b & 7) + 1u;
  none_ = false;
  if (code == 15) {
    none_ = true;
  } else if (code == 14) {  // long form: line delta, end line delta, column + 1, end column + 1
    move_line(svarint(t, i));
    (void)varint(t, i);
    (void)varint(t, i);
    (void)varint(t, i);
  } else if (code == 13) {  // no column
    move_line(svarint(t, i));
  } else if (code >= 10) {  // one-line form: the line moves by code - 10, then column, end column
    move_line(code - 10);
    i += 2;
  } else {  // short form: the same line, one byte of columns
    i += 1;
  }
  return true;
}

std::uint32_t PythonLines::line(std::uint64_t index) {
  if (index < at_) restart();
  while (length_ == 0 || index >= at_ + length_)  // an empty entry (3.10) only moves the line
    if (!next()) return 0;                        // past the table's end (or a malformed entry): no line
  return none_ || line_ <= 0 || line_ > std::int64_t{UINT32_MAX} ? 0 : static_cast<std::uint32_t>(line_);
}

std::uint32_t python_line(std::string_view t, std::uint32_t first_line, std::uint64_t index, std::uint32_t format) {
  return PythonLines(t, first_line, format).line(index);
}

void ImageTables::add_module(ModuleEntry module) {
  const std::uint64_t start = module.start, end = module.end;
  modules.push_back(std::move(module));
  if (start >= end || modules.back().path.empty()) return;
  // Cut the ranges the new module covers out of the spans before it; the pieces outside stay theirs.
  auto it = spans.lower_bound(start);
  if (it != spans.begin() && std::prev(it)->second.end > start) --it;
  while (it != spans.end() && it->first < end) {
    const std::uint64_t s = it->first;
    const Span span = it->second;
    it = spans.erase(it);
    if (s < start) spans.emplace(s, Span{start, span.module});
    if (span.end > end) it = spans.emplace(end, Span{span.end, span.module}).first;
  }
  spans.emplace(start, Span{end, modules.size() - 1});
}

const ModuleEntry* ImageTables::module_of(std::uint64_t address) const {
  auto it = spans.upper_bound(address);
  if (it == spans.begin()) return nullptr;
  --it;
  return address < it->second.end ? &modules[it->second.module] : nullptr;
}

ImageTables& StackTables::current(std::int32_t pid) {
  auto it = current_.find(pid);
  if (it == current_.end()) {
    images_.push_back(ImageTables{pid, {}, {}, {}});
    it = current_.emplace(pid, images_.size() - 1).first;
  }
  return images_[it->second];
}

void StackTables::on_fork(std::int32_t pid, std::int32_t ppid) {
  ImageTables copy;
  if (const auto parent = current_.find(ppid); parent != current_.end()) copy = images_[parent->second];
  copy.pid = pid;
  images_.push_back(std::move(copy));
  current_[pid] = images_.size() - 1;
}

void StackTables::on_exec(std::int32_t pid) {
  images_.push_back(ImageTables{pid, {}, {}, {}});
  current_[pid] = images_.size() - 1;
}

void StackTables::on_slot(const RingEvent& slot, std::uint64_t position) {
  if (slot.kind == RingEventKind::NoteData) {
    if (note_.missing == 0) return;
    RingNoteData d;
    std::memcpy(&d, &slot, sizeof d);
    note_.payload.append(d.bytes, d.length < kNoteDataBytes ? d.length : kNoteDataBytes);
    if (--note_.missing == 0) finish_note();
    return;
  }
  note_ = Note{};
  note_.head = slot;
  note_.position = position;
  note_.missing = slot.old_addr;
  if (note_.missing == 0) finish_note();
}

void StackTables::on_abandoned() {
  // A block whose writer died midway: the nodes or module are lost (the process is gone too).
  note_.missing = 0;
}

void StackTables::finish_note() {
  const RingEvent& h = note_.head;
  const std::string& p = note_.payload;
  ImageTables& image = current(h.pid);
  if (h.kind == RingEventKind::NoteStackNodes) {
    codec::StackNodes r;
    r.pid = h.pid;
    r.event = note_.position;
    r.first_id = static_cast<std::uint32_t>(h.addr);
    const std::size_t n = p.size() / 12;
    r.parents.reserve(n);
    r.addresses.reserve(n);
    new_addresses_.clear();
    for (std::size_t i = 0; i < n; ++i) {
      r.parents.push_back(load_le<std::uint32_t>(p.data() + 12 * i));
      r.addresses.push_back(load_le<std::uint64_t>(p.data() + 12 * i + 4));
      const std::uint64_t address = r.addresses.back();
      image.addresses.set(r.first_id + static_cast<std::uint32_t>(i), address);
      if (on_new_addresses_ && address != codec::kTruncatedStackAddress)
        if (const ModuleEntry* m = image.module_of(address); m != nullptr && !is_python_module(*m))
          new_addresses_.push_back({m, address - m->bias});
    }
    if (!new_addresses_.empty()) on_new_addresses_(new_addresses_);
    nodes_ += n;
    if (n != 0) channel_.add(std::move(r));
    return;
  }
  if (h.kind == RingEventKind::NotePythonCode) {
    RingPythonCodePayload c;
    const ModuleEntry* m = image.module_of(h.addr);
    if (m == nullptr || !is_python_module(*m) || p.size() < sizeof c) return;
    std::memcpy(&c, p.data(), sizeof c);
    if (sizeof c + c.name_bytes + c.file_bytes > p.size()) return;
    PythonCode code;
    code.first_line = c.first_line;
    code.name = p.substr(sizeof c, c.name_bytes);
    code.file = p.substr(sizeof c + c.name_bytes, c.file_bytes);
    code.linetable = p.substr(sizeof c + c.name_bytes + c.file_bytes, c.linetable_bytes);
    code.table_format = c.table_format;
    const auto id = static_cast<std::uint32_t>((h.addr - m->bias) >> 20);
    python_codes_[{m->path, m->build_id}][id] = std::move(code);
    return;
  }
  if (h.kind != RingEventKind::NoteModule || p.size() < sizeof(RingModulePayload)) return;
  RingModulePayload m;
  std::memcpy(&m, p.data(), sizeof m);
  const bool loaded = (h.flags & kRingModuleUnloaded) == 0;
  ModuleEntry e;
  e.bias = h.addr;
  e.start = m.start;
  e.end = m.end;
  e.loaded = loaded;
  if (loaded) {
    const std::size_t id_end = sizeof m + m.build_id_size;
    if (id_end > p.size()) return;
    e.build_id.assign(p.begin() + sizeof m, p.begin() + static_cast<std::ptrdiff_t>(id_end));
    e.path = p.substr(id_end);
    image.add_module(e);
  } else {
    // The unload names the range of a module noted before: its path and build-id come from there.
    for (auto it = image.modules.rbegin(); it != image.modules.rend(); ++it) {
      if (it->loaded && it->start == e.start && it->end == e.end && it->bias == e.bias) {
        it->loaded = false;
        e.path = it->path;
        e.build_id = it->build_id;
        break;
      }
    }
  }
  ++modules_;
  channel_.add(codec::Module{h.pid, note_.position, e.path, e.build_id, e.bias, e.start, e.end, loaded});
}

StackSummary StackTables::summary() const {
  StackSummary s;
  s.nodes = nodes_;
  s.modules = modules_;
  s.images = images_.size();
  for (const ImageTables& image : images_) {
    s.table_bytes += image.addresses.bytes();
    for (const ModuleEntry& m : image.modules) s.table_bytes += sizeof m + m.path.size() + m.build_id.size();
  }
  return s;
}

codec::Status event_stacks_records(const pipeline::FrameContextInput& frame, std::vector<codec::ContextRecord>& out) {
  // A frame's ids column is 4 bytes per event: split at the reader's bin limit.
  const std::size_t per_record = codec::kMaxContextBinBytes / 4;
  const std::span<const codec::Event> events = frame.events;
  for (std::size_t i = 0; i < events.size() || (i == 0 && events.empty()); i += per_record) {
    codec::EventStacks part;
    part.first_event = frame.first_event + i;
    const std::size_t end = std::min(events.size(), i + per_record);
    part.ids.reserve(end - std::min(i, end));
    for (std::size_t k = i; k < end; ++k) part.ids.push_back(events[k].stack);
    out.emplace_back(std::move(part));
    if (events.empty()) break;
  }
  return {};
}

}  // namespace memtrack::runtime
