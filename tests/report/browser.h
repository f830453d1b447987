// Headless Chromium for the page tests: load a file, keep the DOM after its scripts ran (--dump-dom), a
// screenshot, and the browser's own log (console messages arrive there as "CONSOLE" lines); plus a PNG decoder
// (zlib) to tell a drawn screenshot from a blank one.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/run.h"

namespace memtrack::testing {

inline constexpr const char* kChromium = "/usr/bin/chromium";

inline bool have_chromium() { return ::access(kChromium, X_OK) == 0; }

// `dom` with the content of every <script> element removed (the elements stay, empty).
inline std::string without_script_text(const std::string& dom) {
  std::string out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t open = dom.find("<script", at);
    if (open == std::string::npos) break;
    const std::size_t body = dom.find('>', open);
    const std::size_t close = dom.find("</script>", body);
    if (body == std::string::npos || close == std::string::npos) break;
    out.append(dom, at, body + 1 - at);
    at = close;
  }
  out.append(dom, at, std::string::npos);
  return out;
}

struct BrowserResult {
  int status = -1;
  std::string dom;            // the document after scripts ran, without the text of its <script> elements
                              // (the page's own code would otherwise match what the tests look for)
  std::string log;            // chromium's stderr
  std::string screenshot;     // path of the PNG, if one was asked for
  std::string console_lines;  // the log's CONSOLE lines (any message the page logged or threw)
};

// Loads `html_path` once with a fresh profile (so no state leaks between runs) and no network services.
// With virtual_time_ms > 0, Chromium runs the page's timers for that much virtual time before dumping (so a test
// can wait for debounced handlers without waiting for real).
inline BrowserResult load_in_chromium(const std::string& html_path, const std::string& tag, bool screenshot,
                                      int virtual_time_ms = 0) {
  static int runs = 0;
  const std::string profile = scratch_dir() + "/chromium-profile-" + tag + "-" + std::to_string(runs++);
  BrowserResult r;
  if (screenshot) r.screenshot = scratch_dir() + "/" + tag + ".png";
  std::string cmd = std::string("timeout 120 ") + kChromium +
                    " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                    " --disable-background-networking --disable-component-update --disable-sync"
                    " --enable-logging=stderr --v=0 --user-data-dir=" +
                    profile + " --window-size=1280,2000";
  if (screenshot) cmd += " --screenshot=" + r.screenshot;
  if (virtual_time_ms > 0) cmd += " --virtual-time-budget=" + std::to_string(virtual_time_ms);
  cmd += " --dump-dom file://" + html_path;
  const RunResult run_result = run(cmd);
  r.status = run_result.status;
  r.dom = without_script_text(run_result.out);
  r.log = run_result.err;
  std::istringstream lines(r.log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(":CONSOLE") != std::string::npos) r.console_lines += line + "\n";
  }
  run("rm -rf " + profile);
  return r;
}

// The value of `attribute` on the dumped <html> element, or "" when absent.
inline std::string html_attribute(const std::string& dom, const std::string& attribute) {
  const std::size_t html = dom.find("<html");
  if (html == std::string::npos) return "";
  const std::size_t close = dom.find('>', html);
  const std::string tag = dom.substr(html, close - html);
  const std::string key = " " + attribute + "=\"";
  const std::size_t at = tag.find(key);
  if (at == std::string::npos) return "";
  const std::size_t begin = at + key.size();
  return tag.substr(begin, tag.find('"', begin) - begin);
}

// The "key=value" lines a test hook wrote into <pre id="mt-test-results">.
inline std::map<std::string, std::string> test_results(const std::string& dom) {
  std::map<std::string, std::string> out;
  const std::string open = "<pre id=\"mt-test-results\">";
  const std::size_t begin = dom.find(open);
  if (begin == std::string::npos) return out;
  const std::size_t end = dom.find("</pre>", begin);
  std::istringstream lines(dom.substr(begin + open.size(), end - begin - open.size()));
  for (std::string line; std::getline(lines, line);) {
    const std::size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

struct Image {
  std::uint32_t width = 0, height = 0;
  std::vector<std::uint32_t> pixels;  // 0xRRGGBB
  std::string error;                  // why decoding failed, "" on success
};

// Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes), alpha dropped.
inline Image decode_png(const std::string& bytes) {
  Image img;
  const auto be32 = [&](std::size_t at) {
    return (std::uint32_t(std::uint8_t(bytes[at])) << 24) | (std::uint32_t(std::uint8_t(bytes[at + 1])) << 16) |
           (std::uint32_t(std::uint8_t(bytes[at + 2])) << 8) | std::uint32_t(std::uint8_t(bytes[at + 3]));
  };
  if (bytes.size() < 8 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) {
    img.error = "not a PNG (bad signature)";
    return img;
  }
  std::string idat;
  unsigned channels = 0;
  for (std::size_t at = 8; at + 12 <= bytes.size();) {
    const std::uint32_t len = be32(at);
    const std::string type = bytes.substr(at + 4, 4);
    if (at + 12 + len > bytes.size()) {
      img.error = "chunk " + type + " at byte " + std::to_string(at) + " runs past the end";
      return img;
    }
    if (type == "IHDR") {
      img.width = be32(at + 8);
      img.height = be32(at + 12);
      const int depth = std::uint8_t(bytes[at + 16]), color = std::uint8_t(bytes[at + 17]);
      const int interlace = std::uint8_t(bytes[at + 20]);
      if (depth != 8 || (color != 2 && color != 6) || interlace != 0) {
        img.error = "unsupported PNG: depth " + std::to_string(depth) + ", color type " + std::to_string(color) +
                    ", interlace " + std::to_string(interlace);
        return img;
      }
      channels = color == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      idat += bytes.substr(at + 8, len);
    }
    at += 12 + len;
  }
  if (!channels || idat.empty()) {
    img.error = "no IHDR or IDAT chunk";
    return img;
  }
  const std::size_t stride = std::size_t(img.width) * channels;
  std::vector<std::uint8_t> raw((stride + 1) * img.height);
  uLongf raw_len = static_cast<uLongf>(raw.size());
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), static_cast<uLong>(idat.size())) !=
          Z_OK ||
      raw_len != raw.size()) {
    img.error = "IDAT does not inflate to " + std::to_string(raw.size()) + " bytes";
    return img;
  }
  std::vector<std::uint8_t> prev(stride, 0), cur(stride);
  img.pixels.resize(std::size_t(img.width) * img.height);
  for (std::uint32_t y = 0; y < img.height; ++y) {
    const std::uint8_t filter = raw[y * (stride + 1)];
    const std::uint8_t* line = &raw[y * (stride + 1) + 1];
    for (std::size_t x = 0; x < stride; ++x) {
      const int a = x >= channels ? cur[x - channels] : 0, b = prev[x], c = x >= channels ? prev[x - channels] : 0;
      int pred = 0;
      switch (filter) {
        case 0:
          pred = 0;
          break;
        case 1:
          pred = a;
          break;
        case 2:
          pred = b;
          break;
        case 3:
          pred = (a + b) / 2;
          break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default:
          img.error = "bad filter " + std::to_string(filter) + " on row " + std::to_string(y);
          return img;
      }
      cur[x] = static_cast<std::uint8_t>(line[x] + pred);
    }
    for (std::uint32_t x = 0; x < img.width; ++x) {
      const std::uint8_t* p = &cur[std::size_t(x) * channels];
      img.pixels[std::size_t(y) * img.width + x] = (std::uint32_t(p[0]) << 16) | (std::uint32_t(p[1]) << 8) | p[2];
    }
    prev.swap(cur);
  }
  return img;
}

struct PixelStats {
  std::size_t distinct = 0;   // different colors
  double non_background = 0;  // share of pixels not of the most common color
};

inline PixelStats pixel_stats(const Image& img) {
  std::unordered_map<std::uint32_t, std::size_t> counts;
  for (const std::uint32_t p : img.pixels) ++counts[p];
  std::size_t most = 0;
  for (const auto& [color, n] : counts) most = n > most ? n : most;
  PixelStats s;
  s.distinct = counts.size();
  s.non_background = img.pixels.empty() ? 0 : 1.0 - double(most) / double(img.pixels.size());
  return s;
}

}  // namespace memtrack::testing
