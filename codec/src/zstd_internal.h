// zstd with its experimental API, for codec's sources only.
//
// zstd.h's ZSTD_STATIC_LINKING_ONLY section (ZSTD_getFrameHeader, ZSTD_getCParams,
// ZSTD_estimateCCtxSize_usingCParams, ...) is not stable across libzstd versions, and zstd.h says never to
// use it against a shared libzstd: a newer libzstd.so could change those structs and functions under a
// binary built with older headers. So codec links Debian's static libzstd.a (zstd::libzstd_static, from
// libzstd-dev), which is always the version these headers describe, and defines MEMTRACK_ZSTD_STATIC to say
// so (codec/CMakeLists.txt). Code that links the shared library cannot include this header by mistake.
// docs/ARCHITECTURE.md says why static linking was chosen over the stable API alone.
#pragma once

#ifndef MEMTRACK_ZSTD_STATIC
#error "zstd's experimental API needs the static libzstd (zstd::libzstd_static): see codec/CMakeLists.txt"
#endif

#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>
