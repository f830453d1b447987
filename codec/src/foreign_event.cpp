#include "memtrack/codec/foreign_event.h"

#include <msgpack.hpp>

namespace memtrack::codec {

void ForeignEvents::add(std::size_t position, const Event& common, std::span<const std::byte> map,
                        std::string_view type) {
  Entry e;
  e.position = position;
  e.pid = common.pid;
  e.tid = common.tid;
  e.timestamp = common.timestamp;
  e.addr = common.addr;
  e.begin = bytes_.size();
  e.size = map.size();
  e.type_begin = e.begin + static_cast<std::size_t>(reinterpret_cast<const std::byte*>(type.data()) - map.data());
  e.type_size = type.size();
  bytes_.insert(bytes_.end(), map.begin(), map.end());
  entries_.push_back(e);
}

void ForeignEvents::add(std::size_t position, const ForeignEvent& e) {
  Event common;
  common.pid = e.pid;
  common.tid = e.tid;
  common.timestamp = e.timestamp;
  common.addr = e.addr;
  add(position, common, e.msgpack, e.type);
}

ForeignEvent ForeignEvents::operator[](std::size_t i) const {
  const Entry& e = entries_[i];
  ForeignEvent f;
  f.position = e.position;
  f.pid = e.pid;
  f.tid = e.tid;
  f.timestamp = e.timestamp;
  f.addr = e.addr;
  f.type = {reinterpret_cast<const char*>(bytes_.data() + e.type_begin), e.type_size};
  f.msgpack = std::span(bytes_).subspan(e.begin, e.size);
  return f;
}

namespace {

// msgpack-c's parse callbacks, forwarded.
class Forward : public msgpack::null_visitor {
 public:
  explicit Forward(MsgpackValueVisitor& v) : v_(v) {}
  bool visit_nil() {
    v_.nil();
    return true;
  }
  bool visit_boolean(bool b) {
    v_.boolean(b);
    return true;
  }
  bool visit_positive_integer(uint64_t x) {
    v_.unsigned_integer(x);
    return true;
  }
  bool visit_negative_integer(int64_t x) {
    if (x >= 0)
      v_.unsigned_integer(static_cast<std::uint64_t>(x));
    else
      v_.signed_integer(x);
    return true;
  }
  bool visit_float32(float x) {
    v_.floating(x);
    return true;
  }
  bool visit_float64(double x) {
    v_.floating(x);
    return true;
  }
  bool visit_str(const char* p, uint32_t n) {
    v_.str({p, n});
    return true;
  }
  bool visit_bin(const char* p, uint32_t n) {
    v_.bin({reinterpret_cast<const std::byte*>(p), n});
    return true;
  }
  bool visit_ext(const char* p, uint32_t n) {  // p[0] is the ext type, then n - 1 bytes of data
    if (n == 0) return false;
    v_.ext(static_cast<std::int8_t>(p[0]), {reinterpret_cast<const std::byte*>(p) + 1, n - 1});
    return true;
  }
  bool start_array(uint32_t n) {
    v_.begin_array(n);
    return true;
  }
  bool end_array() {
    v_.end_array();
    return true;
  }
  bool start_map(uint32_t n) {
    v_.begin_map(n);
    return true;
  }
  bool end_map() {
    v_.end_map();
    return true;
  }
  void parse_error(size_t, size_t) {}
  void insufficient_bytes(size_t, size_t) {}

 private:
  MsgpackValueVisitor& v_;
};

}  // namespace

bool visit_msgpack(std::span<const std::byte> value, MsgpackValueVisitor& visitor) {
  Forward f(visitor);
  std::size_t pos = 0;
  return msgpack::parse(reinterpret_cast<const char*>(value.data()), value.size(), pos, f) && pos == value.size();
}

}  // namespace memtrack::codec
