#pragma once
#include <stddef.h>
void* lib_outer(size_t n);
