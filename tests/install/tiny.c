/* The program the install tests record: a malloc of 4096 B kept to the end, one of 100 B freed. The pointers
   are volatile so the compiler cannot remove the allocations. */
#include <stdlib.h>
#include <string.h>

int main(void) {
  char* volatile kept = malloc(4096);
  char* volatile freed = malloc(100);
  memset(kept, 1, 4096);
  free(freed);
  return kept[10] == 1 ? 0 : 1;
}
