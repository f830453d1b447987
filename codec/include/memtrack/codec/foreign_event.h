// Foreign events: MemtrackEvent maps whose "type" names no variant this reader knows (CodSpeed's newer kinds:
// Rss, Rmap, Fork, Exec, Exit, ...; docs/FORMAT.md, "Readers' rule"). A reader goes on past them: the frame
// readers keep them here, beside the known events and never among them, so that no analysis can count them,
// while `decode` passes them through and `stats` counts them by type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "memtrack/codec/event.h"

namespace memtrack::codec {

// One foreign event, viewing its batch's storage (valid until the ForeignEvents it came from changes).
struct ForeignEvent {
  std::size_t position = 0;       // how many known events of the same batch come before it
  std::int32_t pid = 0, tid = 0;  // the common keys, which a foreign event must have like any event
  std::uint64_t timestamp = 0, addr = 0;
  std::string_view type;               // its "type" value, as the map holds it
  std::span<const std::byte> msgpack;  // the whole map, as the frame holds it
};

// The foreign events of one batch of known events (a frame, or a piece of a streamed one), in stream order.
class ForeignEvents {
 public:
  // From the parser: `common` holds the event's pid, tid, timestamp and addr, `map` is its whole map, `type`
  // a view into it.
  void add(std::size_t position, const Event& common, std::span<const std::byte> map, std::string_view type);
  // A copy of `e` (its bytes too) at `position`.
  void add(std::size_t position, const ForeignEvent& e);
  void clear() {
    entries_.clear();
    bytes_.clear();
  }
  [[nodiscard]] bool empty() const { return entries_.empty(); }
  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] ForeignEvent operator[](std::size_t i) const;

 private:
  struct Entry {
    std::size_t position = 0;
    std::int32_t pid = 0, tid = 0;
    std::uint64_t timestamp = 0, addr = 0;
    std::size_t begin = 0, size = 0, type_begin = 0, type_size = 0;  // in bytes_
  };
  std::vector<Entry> entries_;
  std::vector<std::byte> bytes_;
};

// What a msgpack value holds, in the order it holds it (keys and values of a map alternate, a key first).
class MsgpackValueVisitor {
 public:
  virtual ~MsgpackValueVisitor() = default;
  virtual void nil() = 0;
  virtual void boolean(bool v) = 0;
  virtual void unsigned_integer(std::uint64_t v) = 0;
  virtual void signed_integer(std::int64_t v) = 0;  // negative values only
  virtual void floating(double v) = 0;
  virtual void str(std::string_view v) = 0;
  virtual void bin(std::span<const std::byte> v) = 0;
  virtual void ext(std::int8_t type, std::span<const std::byte> v) = 0;
  virtual void begin_array(std::uint32_t n) = 0;
  virtual void end_array() = 0;
  virtual void begin_map(std::uint32_t n) = 0;
  virtual void end_map() = 0;
};

// Walks one msgpack value (a foreign event's map) into `visitor`. False if the bytes are not one whole value
// (never for a ForeignEvent's msgpack, which the parser has checked).
bool visit_msgpack(std::span<const std::byte> value, MsgpackValueVisitor& visitor);

}  // namespace memtrack::codec
