// Report documents for the page tests (schema: tools/report/report_html.h), generated rather than stored so
// the big one (20,000 samples per series, 20,000 frames per flame graph) costs no repository space and every
// value the tests check is known here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memtrack::testing {

// A minimal JSON writer: enough for the fixtures, strings escaped per RFC 8259.
class JsonOut {
 public:
  JsonOut& raw(std::string_view s) {
    out_ += s;
    return *this;
  }
  JsonOut& str(std::string_view s) {
    out_ += '"';
    for (const char c : s) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += c;
      } else if (u < 0x20) {
        static constexpr char kHex[] = "0123456789abcdef";
        out_ += "\\u00";
        out_ += kHex[u >> 4];
        out_ += kHex[u & 15];
      } else {
        out_ += c;
      }
    }
    out_ += '"';
    return *this;
  }
  JsonOut& num(std::uint64_t v) {
    out_ += std::to_string(v);
    return *this;
  }
  JsonOut& key(std::string_view k) {
    str(k);
    out_ += ':';
    return *this;
  }
  JsonOut& nums(const std::vector<std::uint64_t>& v) {
    out_ += '[';
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) out_ += ',';
      out_ += std::to_string(v[i]);
    }
    out_ += ']';
    return *this;
  }
  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

struct FlameNode {
  std::string name, module, file;
  std::uint64_t value = 0, count = 0, line = 0;
  std::vector<FlameNode> children;
  std::int64_t base = -1;  // the baseline's value (a differential graph); -1: none
};

inline void write_node(JsonOut& j, const FlameNode& n) {
  j.raw("{").key("name").str(n.name).raw(",").key("value").num(n.value).raw(",").key("count").num(n.count);
  j.raw(",").key("module");
  n.module.empty() ? j.raw("null") : j.str(n.module);
  j.raw(",").key("file");
  n.file.empty() ? j.raw("null") : j.str(n.file);
  j.raw(",").key("line");
  n.line ? j.num(n.line) : j.raw("null");
  if (n.base >= 0) j.raw(",").key("base").num(static_cast<std::uint64_t>(n.base));
  j.raw(",").key("children").raw("[");
  for (std::size_t i = 0; i < n.children.size(); ++i) {
    if (i) j.raw(",");
    write_node(j, n.children[i]);
  }
  j.raw("]}");
}

// The small report's function names and values, which the tests look for in the rendered page.
inline constexpr std::string_view kEvilName = "</script><b id=\"injected\">evil</b>";
inline constexpr std::string_view kTemplateCaller =
    "std::vector<std::pair<int, std::string>, std::allocator<std::pair<int, std::string> > >::push_back(int)";
inline constexpr std::uint64_t kPeakRoot = 1'000'000, kAllocBufferBytes = 350'000, kParseAndBuildBytes = 800'000;

inline FlameNode leaf(std::string name, std::uint64_t value, std::uint64_t count, std::string module, std::string file,
                      std::uint64_t line) {
  return FlameNode{std::move(name), std::move(module), std::move(file), value, count, line, {}};
}

// "Live at peak": all 1,000,000 = main 900,000 {parse_config 300,000 {alloc_buffer 200,000},
// build_index 500,000 {alloc_buffer 150,000, std::vector<int>::_M_realloc_insert 250,000},
// leaky_cache_insert 100,000} + the evil name 100,000. alloc_buffer totals 350,000; parse_ and build_ 800,000.
inline FlameNode small_peak_tree() {
  FlameNode parse = leaf("parse_config", 300'000, 30, "prog", "src/config.cpp", 17);
  parse.children.push_back(leaf("alloc_buffer", 200'000, 20, "libbuf.so", "src/buffer.cpp", 42));
  FlameNode build = leaf("build_index", 500'000, 50, "prog", "src/index.cpp", 88);
  build.children.push_back(leaf("alloc_buffer", 150'000, 15, "libbuf.so", "src/buffer.cpp", 42));
  build.children.push_back(
      leaf("std::vector<int>::_M_realloc_insert", 250'000, 25, "libstdc++.so.6", "bits/vector.tcc", 503));
  FlameNode main_fn = leaf("main", 900'000, 90, "prog", "src/main.cpp", 5);
  main_fn.children.push_back(std::move(parse));
  main_fn.children.push_back(std::move(build));
  main_fn.children.push_back(leaf("leaky_cache_insert", 100'000, 10, "prog", "src/cache.cpp", 61));
  FlameNode root = leaf("all", kPeakRoot, 100, "", "", 0);
  root.children.push_back(std::move(main_fn));
  root.children.push_back(leaf(std::string(kEvilName), 100'000, 10, "evil.so", "src/evil\xe2\x80\xa8.cpp", 1));
  return root;
}

// small_peak_tree against a baseline (every node's base set): main 900,000 (base 650,000) {parse_config
// 300,000 unchanged {alloc_buffer 200,000 unchanged}, build_index 500,000 grown from 200,000 {alloc_buffer
// 150,000 from 50,000, _M_realloc_insert 250,000 from 150,000}, leaky_cache_insert 100,000 new (base 0),
// dropped_cache gone (0, base 150,000)}, the evil name 100,000 shrunk from 250,000; all 1,000,000 from 900,000.
inline constexpr std::uint64_t kDroppedCacheBase = 150'000, kPeakRootBase = 900'000;
inline FlameNode differential_peak_tree() {
  FlameNode root = small_peak_tree();
  root.base = kPeakRootBase;
  FlameNode& main_fn = root.children[0];
  main_fn.base = 650'000;
  main_fn.children[0].base = 300'000;
  main_fn.children[0].children[0].base = 200'000;
  main_fn.children[1].base = 200'000;
  main_fn.children[1].children[0].base = 50'000;
  main_fn.children[1].children[1].base = 150'000;
  main_fn.children[2].base = 0;
  FlameNode dropped = leaf("dropped_cache", 0, 0, "prog", "src/cache.cpp", 90);
  dropped.base = kDroppedCacheBase;
  main_fn.children.push_back(std::move(dropped));
  root.children[1].base = 250'000;
  return root;
}

// Every node's base set to its value times num / den.
inline void scale_base(FlameNode& n, std::uint64_t num, std::uint64_t den) {
  n.base = static_cast<std::int64_t>(n.value * num / den);
  for (FlameNode& c : n.children) scale_base(c, num, den);
}

inline void write_site(JsonOut& j, const std::vector<std::string>& functions, std::uint64_t scale) {
  j.raw("{").key("stack").raw("[");
  for (std::size_t i = 0; i < functions.size(); ++i) {
    if (i) j.raw(",");
    // An empty name: a frame without one (a stripped module), as the tools write it (null).
    j.raw("{").key("function");
    if (functions[i].empty())
      j.raw("null");
    else
      j.str(functions[i]);
    j.raw(",").key("module").str("/usr/lib/prog").raw(",").key("file");
    j.str("src/" + std::to_string(i) + ".cpp").raw(",").key("line").num(10 + i).raw(",").key("address");
    j.num(0x401000 + 16 * i).raw("}");
  }
  j.raw("],").key("peak_bytes").num(1000 * scale).raw(",").key("allocated_bytes").num(5000 * scale);
  j.raw(",").key("allocations").num(10 * scale).raw(",").key("leaked_bytes").num(100 * scale);
  j.raw(",").key("leaked_blocks").num(scale).raw(",").key("temporary").num(2 * scale).raw("}");
}

// A deterministic pseudo-random source (the fixtures must not change between runs).
struct Lcg {
  std::uint64_t state;
  std::uint64_t next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  }
};

// Grows `node` by random callees until `budget` nodes exist in total, at most `depth_left` levels deeper.
inline void grow(FlameNode& node, std::size_t& budget, int depth_left, Lcg& rng) {
  if (depth_left == 0) return;
  const std::size_t fanout = 1 + rng.next() % 4;
  for (std::size_t k = 0; k < fanout && budget > 0; ++k) {
    --budget;
    const std::uint64_t id = rng.next() % 3000;
    node.children.push_back(leaf("fn_" + std::to_string(id), 0, 0, "libbig" + std::to_string(id % 7) + ".so",
                                 "src/big" + std::to_string(id % 97) + ".cpp", 1 + id % 400));
    grow(node.children.back(), budget, depth_left - 1, rng);
  }
}
// Sets every value to its self bytes plus its callees', so the tree is consistent.
inline void total_up(FlameNode& node, Lcg& rng) {
  node.value = 64 + rng.next() % 20'000;
  node.count = 1 + rng.next() % 8;
  for (auto& c : node.children) {
    total_up(c, rng);
    node.value += c.value;
    node.count += c.count;
  }
}
// `nodes` frames in all: the known chain main > run_workload > build_index > alloc_buffer holds half the bytes
// (so its labels are wide enough to be drawn), the rest is random.
inline FlameNode big_tree(std::size_t nodes, std::uint64_t seed) {
  Lcg rng{seed};
  FlameNode root = leaf("all", 0, 0, "", "", 0);
  std::size_t budget = nodes - 1;
  FlameNode main_fn = leaf("main", 0, 0, "prog", "src/main.cpp", 5);
  FlameNode run = leaf("run_workload", 0, 0, "prog", "src/run.cpp", 20);
  FlameNode build = leaf("build_index", 0, 0, "prog", "src/index.cpp", 88);
  FlameNode alloc = leaf("alloc_buffer", 0, 0, "libbuf.so", "src/buffer.cpp", 42);
  budget -= 4;
  std::size_t known = budget / 2, rest = budget - known;
  while (known > 0) grow(alloc, known, 24, rng);
  while (rest > 0) grow(root, rest, 24, rng);
  build.children.push_back(std::move(alloc));
  run.children.push_back(std::move(build));
  main_fn.children.push_back(std::move(run));
  root.children.insert(root.children.begin(), std::move(main_fn));
  total_up(root, rng);
  return root;
}
inline std::size_t count_nodes(const FlameNode& n) {
  std::size_t c = 1;
  for (const auto& k : n.children) c += count_nodes(k);
  return c;
}

struct FixtureShape {
  std::size_t points;       // samples per series
  std::size_t processes;    // per-process series, each with `points` samples
  std::size_t flame_nodes;  // frames per flame graph (0: the small hand-made trees)
  std::size_t sites;        // rows per top ranking
  bool baseline = false;    // compared with a baseline (small trees only): differential_peak_tree and friends
};
inline constexpr FixtureShape kSmall{200, 2, 0, 8};
inline constexpr FixtureShape kSmallAgainstBaseline{200, 2, 0, 8, true};
inline constexpr FixtureShape kBig{20'000, 4, 20'000, 100};
inline constexpr FixtureShape kGeneratorSized{2'000, 4, 2'000, 50};

// The whole report document. Timeline: heap rises to a peak at 60% of the run then falls; mapped is heap plus a
// constant 8 MiB; process k starts at k/8 of the run.
inline std::string make_report_json(const FixtureShape& shape) {
  const std::uint64_t step = 50'000;  // ns between samples
  std::vector<std::uint64_t> t(shape.points), heap(shape.points), mapped(shape.points);
  Lcg rng{42};
  const std::size_t peak_at = shape.points * 6 / 10;
  for (std::size_t i = 0; i < shape.points; ++i) {
    t[i] = i * step;
    const std::uint64_t base = i <= peak_at ? i * 4096 : (shape.points - i) * 4096 * 6 / 4;
    heap[i] = base + rng.next() % 2048;
    mapped[i] = heap[i] + (8u << 20);
  }
  heap[peak_at] = peak_at * 4096 + 4096;  // the unique maximum
  const std::uint64_t duration = t.back();

  JsonOut j;
  j.raw("{").key("version").num(1).raw(",").key("meta").raw("{").key("command").raw("[");
  j.str("./prog").raw(",").str("--input").raw(",").str("data file.txt").raw("],").key("memtrack").str("0.1.0-test");
  j.raw(",").key("events").num(shape.points * 1000).raw(",").key("duration_ns").num(duration);
  j.raw(",").key("artifact").str("/tmp/123.MemtrackArtifact.msgpack").raw("},");
  if (shape.baseline) {
    j.key("baseline").raw("{").key("artifact").str("base.mt").raw(",").key("differential").raw("true,");
    j.key("match").str("sites paired by function, file and module name (fixture)").raw(",").key("totals").raw("{");
    j.key("base").raw("{").key("peak_bytes").num(heap[peak_at] * 3 / 4).raw("},").key("head").raw("{");
    j.key("peak_bytes").num(heap[peak_at]).raw("}}},");
  }

  j.key("summary").raw("{").key("events").num(shape.points * 1000).raw(",").key("peak heap bytes").num(heap[peak_at]);
  j.raw(",").key("processes").num(shape.processes).raw(",").key("allocator").str("glibc malloc");
  j.raw(",")
      .key("line separator")
      .str(
          "before\xe2\x80\xa8"
          "after")
      .raw("},");

  j.key("timeline").raw("{").key("t_ns").nums(t).raw(",").key("heap").nums(heap).raw(",").key("mapped").nums(mapped);
  j.raw(",").key("peak").raw("{").key("t_ns").num(t[peak_at]).raw(",").key("bytes").num(heap[peak_at]).raw("}");
  j.raw(",").key("processes").raw("[");
  for (std::size_t k = 0; k < shape.processes; ++k) {
    if (k) j.raw(",");
    std::vector<std::uint64_t> pt, ph;
    for (std::size_t i = 0; i < shape.points; ++i) {
      pt.push_back(duration * k / 8 + t[i] * (8 - k) / 8);
      ph.push_back(heap[i] / (k + 1));
    }
    j.raw("{").key("pid").num(1000 + k).raw(",").key("label").str(k ? "worker " + std::to_string(k) : "./prog");
    j.raw(",").key("t_ns").nums(pt).raw(",").key("heap").nums(ph).raw("}");
  }
  j.raw("],").key("markers").raw("[");
  for (std::size_t k = 0; k < shape.processes; ++k) {
    if (k) j.raw(",");
    j.raw("{").key("t_ns").num(duration * k / 8).raw(",").key("kind").str("start").raw(",").key("pid").num(1000 + k);
    j.raw(",").key("label").str("worker").raw("},");
    j.raw("{").key("t_ns").num(duration * k / 8 + duration / 16).raw(",").key("kind").str("exec");
    j.raw(",").key("pid").num(1000 + k).raw(",").key("label").str("/usr/bin/worker").raw("},");
    j.raw("{").key("t_ns").num(duration - k * step).raw(",").key("kind").str("exit").raw(",").key("pid").num(1000 + k);
    j.raw(",").key("label").str("exit 0").raw("}");
  }
  j.raw("],").key("regions").raw("[{").key("name").str("warmup").raw(",").key("begin_ns").num(0);
  j.raw(",").key("end_ns").num(duration / 5).raw("},{").key("name").str("steady state").raw(",").key("begin_ns");
  j.num(duration / 2).raw(",").key("end_ns").num(duration * 3 / 4).raw("}],");
  if (shape.baseline) {
    std::vector<std::uint64_t> base_heap;
    for (const std::uint64_t h : heap) base_heap.push_back(h * 3 / 4);
    j.key("baseline").raw("{").key("label").str("baseline live heap (base.mt)").raw(",").key("t_ns").nums(t);
    j.raw(",").key("heap").nums(base_heap).raw("},");
  }
  j.key("downsampled_from").num(shape.points * 50).raw("},");

  j.key("flame").raw("{").key("peak");
  if (shape.flame_nodes) {
    write_node(j, big_tree(shape.flame_nodes, 1));
    j.raw(",").key("allocated");
    write_node(j, big_tree(shape.flame_nodes, 2));
    j.raw(",").key("leaked");
    write_node(j, big_tree(shape.flame_nodes, 3));
  } else {
    write_node(j, shape.baseline ? differential_peak_tree() : small_peak_tree());
    FlameNode allocated = small_peak_tree();
    allocated.value *= 3;
    allocated.children[0].value *= 3;                 // main: more allocated than live, the rest in main's own frame
    if (shape.baseline) scale_base(allocated, 1, 1);  // unchanged
    j.raw(",").key("allocated");
    write_node(j, allocated);
    FlameNode leaked = leaf("all", 100'000, 10, "", "", 0);
    FlameNode main_fn = leaf("main", 100'000, 10, "prog", "src/main.cpp", 5);
    main_fn.children.push_back(leaf("leaky_cache_insert", 100'000, 10, "prog", "src/cache.cpp", 61));
    leaked.children.push_back(std::move(main_fn));
    if (shape.baseline) scale_base(leaked, 2, 1);  // the baseline leaked twice as much
    j.raw(",").key("leaked");
    write_node(j, leaked);
  }
  j.raw(",").key("pruned").raw("{").key("peak").raw("{").key("nodes").num(1234).raw(",").key("bytes").num(5678);
  j.raw(",").key("threshold").raw("0.001}}},");

  j.key("top").raw("{");
  const char* rankings[] = {"peak", "allocated", "count", "leaked", "temporary"};
  for (std::size_t r = 0; r < 5; ++r) {
    if (r) j.raw(",");
    j.key(rankings[r]).raw("[");
    for (std::size_t s = 0; s < shape.sites; ++s) {
      if (s) j.raw(",");
      std::vector<std::string> stack = {s == 0   ? "alloc_buffer"
                                        : s == 1 ? std::string(kEvilName)
                                                 : "site_" + std::to_string(s),
                                        "build_index", "main"};
      // Site 2 is reached through allocation wrappers from a template function; site 3's innermost frame
      // has no name.
      if (s == 2) stack = {"xmalloc", "operator new(unsigned long)", std::string(kTemplateCaller), "main"};
      if (s == 3) stack.front().clear();
      for (std::size_t d = 0; shape.flame_nodes && d < 13; ++d) stack.push_back("frame_" + std::to_string(d));
      write_site(j, stack, shape.sites - s);
    }
    j.raw("]");
  }
  j.raw(",").key("total").num(shape.sites + 12);  // the recording has more sites than the rankings list
  j.raw("}}");
  return j.text();
}

}  // namespace memtrack::testing
