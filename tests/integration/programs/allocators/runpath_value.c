// The library dlopen_runpath.c finds through its RUNPATH.
int mt_runpath_value(void) { return 42; }
