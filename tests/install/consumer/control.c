/* The installed harness control library, as a C program links it: without memtrack every call is a no-op. */
#include <memtrack/control.h>
#include <stdio.h>

int main(void) {
  memtrack_region_begin("install");
  memtrack_pause();
  memtrack_resume();
  memtrack_region_end();
  const int recording = memtrack_is_recording();
  printf("control: recording %d\n", recording);
  return recording == 0 ? 0 : 1;
}
