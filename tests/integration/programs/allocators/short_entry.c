// An allocator library whose free functions are too short to patch in place, as an empty `mi_free` is:
// mi_free is `endbr64; ret` (5 bytes) placed 4 bytes past a 16-byte boundary, so its 5 bytes straddle an
// 8-byte word; mi_free_size is a single `ret`. Alignment padding (int3) follows each. mi_malloc hands out
// blocks of a static arena (never reused), so every block has its own address. Written in assembly where the
// shape matters, so the compiler cannot change it.
#include <stdatomic.h>
#include <stddef.h>

__asm__(
    ".text\n"
    ".p2align 4\n"
    ".byte 0xcc, 0xcc, 0xcc, 0xcc\n"
    ".globl mi_free\n"
    ".type mi_free, @function\n"
    "mi_free:\n"
    "  endbr64\n"
    "  ret\n"
    ".size mi_free, .-mi_free\n"
    ".p2align 4, 0xcc\n"
    ".globl mi_free_size\n"
    ".type mi_free_size, @function\n"
    "mi_free_size:\n"
    "  ret\n"
    ".size mi_free_size, .-mi_free_size\n"
    ".p2align 4, 0xcc\n");

static _Alignas(16) char arena[1 << 22];
static atomic_size_t used;

void* mi_malloc(size_t n) {
  const size_t at = atomic_fetch_add(&used, (n + 15) & ~(size_t)15);
  return at + n <= sizeof arena ? arena + at : NULL;
}
