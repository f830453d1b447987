#include "memtrack/codec/event.h"

namespace memtrack::codec {

std::string_view kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::Malloc:
      return "Malloc";
    case EventKind::Free:
      return "Free";
    case EventKind::Calloc:
      return "Calloc";
    case EventKind::Realloc:
      return "Realloc";
    case EventKind::AlignedAlloc:
      return "AlignedAlloc";
    case EventKind::Mmap:
      return "Mmap";
    case EventKind::Munmap:
      return "Munmap";
    case EventKind::Brk:
      return "Brk";
  }
  return "Unknown";
}

}  // namespace memtrack::codec
