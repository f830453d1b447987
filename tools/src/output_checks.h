// Checks encode and decode make before they open (and so truncate) their output.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "args.h"

namespace memtrack::tools {

// Throws UsageError when `output` is the same file as `input` ("-" for stdout and stdin): opening it for
// writing would truncate the input before a byte of it was read (`-i X -o X`, also through a symlink or a
// hard link, or `>> X` on stdout). Only regular files count: /dev/null may be both.
inline void refuse_output_is_input(const std::string& input, const std::string& output) {
  struct stat in {
  }, out{};
  const int opened = input == "-" ? ::fstat(0, &in) : ::stat(input.c_str(), &in);
  if (opened != 0 || !S_ISREG(in.st_mode)) return;
  const int found = output == "-" ? ::fstat(1, &out) : ::stat(output.c_str(), &out);
  if (found == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
    throw UsageError((output == "-" ? std::string("stdout") : output) + " is the input " +
                     (input == "-" ? std::string("stdin") : input) + " (same file): writing it would destroy it");
  }
}

}  // namespace memtrack::tools
