// hook_capture(out, max, truncated, value): memtrack_unwind_capture(out, max, 0, truncated) called as the
// preload's malloc calls it: from a frame without a frame pointer that saved rbp and holds `value` in it
// during the call (the preload's malloc keeps the returned pointer there), so the innermost frames' rbp can
// differ from one capture to the next. For the unwinder's tests (tests/unwind/capture_test.cpp) and its
// benchmark (bench/unwind.cpp).
//
// Hand-written so that the frame is exactly this whatever the compiler does. The label is not .globl: every
// translation unit that includes this header gets its own local copy, so any number of them may link
// together (like chain_impl.h's levels).
#pragma once

#include <cstddef>
#include <cstdint>

#include "memtrack/unwind/unwind.h"

extern "C" std::size_t hook_capture(std::uintptr_t* out, std::size_t max, bool* truncated, std::uintptr_t value);
asm(R"(
  .text
  .p2align 4
  .type hook_capture, @function
hook_capture:
  .cfi_startproc
  pushq %rbp
  .cfi_adjust_cfa_offset 8
  .cfi_offset %rbp, -16
  movq %rcx, %rbp
  movq %rdx, %rcx
  xorl %edx, %edx
  call memtrack_unwind_capture
  popq %rbp
  .cfi_adjust_cfa_offset -8
  .cfi_restore %rbp
  ret
  .cfi_endproc
  .size hook_capture, .-hook_capture
)");
