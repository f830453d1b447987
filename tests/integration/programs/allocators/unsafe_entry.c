// A library defining `mi_malloc` whose own loop jumps back into its first 5 bytes: patching its entry would
// break it, so the preload must refuse it (and say so) and leave it working. It returns 0 after 3 rounds.
// Written in assembly so the compiler cannot change the shape that makes it unpatchable.
__asm__(
    ".text\n"
    ".globl mi_malloc\n"
    ".type mi_malloc, @function\n"
    ".p2align 4\n"
    "mi_malloc:\n"
    "  xorl %eax, %eax\n"
    "1:\n"
    "  incl %eax\n"
    "  cmpl $3, %eax\n"
    "  jne 1b\n"
    "  xorl %eax, %eax\n"
    "  ret\n"
    ".size mi_malloc, .-mi_malloc\n");
