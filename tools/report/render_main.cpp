// memtrack-report-html IN.json [-o OUT.html] [--test-script FILE.js]: renders a report JSON document into the
// page, for the browser tests and for working on the page by hand (open OUT.html in a browser). Not installed.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "report_html.h"

namespace {

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "memtrack-report-html: cannot open " << path << ": " << std::strerror(errno) << "\n";
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string input, output = "-", script_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "-o" || arg == "--test-script") && i + 1 < argc) {
      (arg == "-o" ? output : script_path) = argv[++i];
    } else if (input.empty() && (arg.empty() || arg[0] != '-')) {
      input = arg;
    } else {
      std::cerr << "usage: memtrack-report-html IN.json [-o OUT.html] [--test-script FILE.js]\n";
      return 2;
    }
  }
  if (input.empty()) {
    std::cerr << "usage: memtrack-report-html IN.json [-o OUT.html] [--test-script FILE.js]\n";
    return 2;
  }
  std::string json, script;
  if (!read_file(input, json)) return 1;
  if (!script_path.empty() && !read_file(script_path, script)) return 1;
  const std::string page = memtrack::tools::render_report_html(json, {.test_script = script});
  if (output == "-") {
    std::cout.write(page.data(), static_cast<std::streamsize>(page.size()));
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "memtrack-report-html: cannot write the page to stdout\n";
      return 1;
    }
    return 0;
  }
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  out.write(page.data(), static_cast<std::streamsize>(page.size()));
  out.close();
  if (!out) {
    std::cerr << "memtrack-report-html: cannot write " << output << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  return 0;
}
