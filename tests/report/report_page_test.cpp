// The page of `memtrack report` (tools/report): the JSON is embedded so that nothing in it can end its script
// element, and, in headless Chromium, the page draws the chart, the flame graphs and the tables from known
// data with no error, stays interactive (zoom, search, tooltips, views) and handles missing sections.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "report/browser.h"
#include "report/report_fixtures.h"
#include "report_html.h"

namespace mt = memtrack::testing;
using memtrack::tools::escape_json;
using memtrack::tools::render_report_html;

namespace {

std::size_t count_of(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string write_page(const std::string& name, const std::string& page) {
  const std::string path = mt::scratch_dir() + "/" + name + ".html";
  std::ofstream(path, std::ios::binary) << page;
  return path;
}

// Runs one page in Chromium and checks what every page must satisfy: the browser ran, logged nothing from the
// page, and the page counted no error of its own (window.onerror, console.error, a blocked load).
mt::BrowserResult load_clean(const std::string& path, const std::string& tag, bool screenshot,
                             int virtual_time_ms = 0) {
  mt::BrowserResult r = mt::load_in_chromium(path, tag, screenshot, virtual_time_ms);
  EXPECT_EQ(r.status, 0) << "chromium failed on " << path << "\n" << r.log.substr(0, 4000);
  EXPECT_EQ(r.console_lines, "") << "the page logged to the console (errors or otherwise)";
  EXPECT_EQ(mt::html_attribute(r.dom, "data-errors"), "0")
      << "errors caught in the page: " << mt::html_attribute(r.dom, "data-error-messages");
  return r;
}

void expect_drawn_screenshot(const mt::BrowserResult& r) {
  const mt::Image img = mt::decode_png(mt::slurp(r.screenshot));
  ASSERT_EQ(img.error, "") << r.screenshot;
  EXPECT_EQ(img.width, 1280u);
  EXPECT_EQ(img.height, 2000u);
  const mt::PixelStats s = mt::pixel_stats(img);
  std::cout << "screenshot " << r.screenshot << ": " << s.distinct << " colors, " << 100 * s.non_background
            << "% non-background pixels\n";
  // A blank or error-only page has a handful of colors and a few percent of ink; the report has text, a
  // chart, a flame graph in many hues and tables.
  EXPECT_GE(s.distinct, 200u);
  EXPECT_GE(s.non_background, 0.08);
}

void report_size_and_time(const std::string& what, const std::string& page, const mt::BrowserResult& r) {
  std::cout << what << ": page " << page.size() << " bytes (" << page.size() / 1024 << " KiB), drawn in "
            << mt::html_attribute(r.dom, "data-render-ms")
            << " ms (JSON.parse, DOM and layout; sections: " << mt::html_attribute(r.dom, "data-timings")
            << "), scripts done " << mt::html_attribute(r.dom, "data-ready-ms") << " ms after navigation start\n";
  ::testing::Test::RecordProperty("page_bytes", std::to_string(page.size()));
  ::testing::Test::RecordProperty("render_ms", mt::html_attribute(r.dom, "data-render-ms"));
}

// Every function name drawn as a flame-graph label (the text of the SVG's <text> elements, HTML-unescaped
// only for the few entities the page writes).
std::string flame_svg(const std::string& dom) {
  const std::size_t begin = dom.find("id=\"mt-flame\"");
  if (begin == std::string::npos) return "";
  return dom.substr(begin, dom.find("</svg>", begin) - begin);
}

// The value of the first `name="..."` at or after `from` in `text`, or "" when there is none.
std::string attribute_at(const std::string& text, std::size_t from, const std::string& name) {
  const std::string key = name + "=\"";
  const std::size_t at = text.find(key, from);
  if (at == std::string::npos) return "";
  const std::size_t begin = at + key.size();
  return text.substr(begin, text.find('"', begin) - begin);
}

bool has_label(const std::string& svg, const std::string& name) {
  return svg.find(">" + name + "</text>") != std::string::npos;
}

#define SKIP_WITHOUT_CHROMIUM()                                                         \
  if (!mt::have_chromium())                                                             \
  GTEST_SKIP() << mt::kChromium                                                         \
               << " is absent: install Debian's chromium package (ci/install-deps.sh) " \
                  "to run the report's browser tests"

}  // namespace

TEST(ReportPage, EmbeddedJsonCannotCloseItsScriptElement) {
  const std::string json = R"({"a": "</script><script>alert(1)</script>", "b": "<!-- x", "c": "a&b>c"})";
  const std::string escaped = escape_json(json);
  EXPECT_EQ(escaped.find('<'), std::string::npos);
  EXPECT_EQ(escaped.find('>'), std::string::npos);
  EXPECT_EQ(escaped.find('&'), std::string::npos);
  EXPECT_NE(escaped.find(R"(\u003c/script\u003e\u003cscript\u003ealert(1))"), std::string::npos);
  // The page has exactly as many "</script" with this data as with none: the data added no closer.
  EXPECT_EQ(count_of(lower(render_report_html(json)), "</script"),
            count_of(lower(render_report_html("{}")), "</script"));
  // Uppercase closers are closers too.
  EXPECT_EQ(escape_json("</SCRIPT>").find('<'), std::string::npos);
}

TEST(ReportPage, LineSeparatorsAndInvalidUtf8AreEscaped) {
  EXPECT_EQ(escape_json("\"a\xe2\x80\xa8"
                        "b\xe2\x80\xa9"
                        "c\""),
            R"("a\u2028b\u2029c")");
  // Valid multi-byte characters pass unchanged: é, €, 😀.
  EXPECT_EQ(escape_json("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""), "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
  // A lone continuation byte, a truncated sequence, an overlong '/', a UTF-16 surrogate, a code point past U+10FFFF.
  EXPECT_EQ(escape_json("\"\x80\""), R"("\ufffd")");
  EXPECT_EQ(escape_json("\"\xe2\x82\""), R"("\ufffd\ufffd")");
  EXPECT_EQ(escape_json("\"\xc0\xaf\""), R"("\ufffd\ufffd")");
  EXPECT_EQ(escape_json("\"\xed\xa0\x80\""), R"("\ufffd\ufffd\ufffd")");
  EXPECT_EQ(escape_json("\"\xf4\x90\x80\x80\""), R"("\ufffd\ufffd\ufffd\ufffd")");
  EXPECT_EQ(escape_json("\"\xe2\x80\""), R"("\ufffd\ufffd")");  // a truncated U+2028
}

TEST(ReportPage, TheTestHookIsOnlyInTestRenderings) {
  const std::string plain = render_report_html("{}");
  EXPECT_EQ(plain.find("memtrack-test-hook"), std::string::npos);
  EXPECT_EQ(plain.find("@MEMTRACK_"), std::string::npos) << "a template marker was left in the page";
  const std::string hooked = render_report_html("{}", {.test_script = "window.hooked = 1;"});
  const std::size_t hook = hooked.find("<script id=\"memtrack-test-hook\">\nwindow.hooked = 1;\n</script>");
  ASSERT_NE(hook, std::string::npos);
  EXPECT_GT(hook, hooked.find("id=\"memtrack-data\"")) << "the hook must run after the page's own script";
}

TEST(ReportPage, NothingIsLoadedFromOutside) {
  const std::string page = lower(render_report_html("{}"));
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
  EXPECT_EQ(page.find("url(http"), std::string::npos);
  EXPECT_NE(page.find("content-security-policy"), std::string::npos);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
}

TEST(ReportBrowser, SmallReportDrawsChartFlameGraphAndTables) {
  SKIP_WITHOUT_CHROMIUM();
  // Through the developer tool, as a person working on the page would.
  const std::string json_path = mt::scratch_dir() + "/small.json";
  std::ofstream(json_path, std::ios::binary) << mt::make_report_json(mt::kSmall);
  const std::string html_path = mt::scratch_dir() + "/small.html";
  const mt::RunResult tool =
      mt::run(std::string(MEMTRACK_BIN_DIR) + "/memtrack-report-html " + json_path + " -o " + html_path);
  ASSERT_EQ(tool.status, 0) << tool.err;
  const std::string page = mt::slurp(html_path);
  ASSERT_EQ(page, render_report_html(mt::slurp(json_path)));

  const mt::BrowserResult r = load_clean(html_path, "small", true);
  EXPECT_EQ(mt::html_attribute(r.dom, "data-rendered"), "yes");
  // The chart: the live heap, the peak, the markers and the regions; mapped bytes (8.5 MiB, which would
  // flatten a 484 KiB heap) are off by default, a toggle in the legend (shown after a click: the driven test).
  EXPECT_NE(r.dom.find("id=\"mt-chart\""), std::string::npos);
  EXPECT_NE(r.dom.find("data-series=\"live heap\""), std::string::npos);
  EXPECT_EQ(r.dom.find("data-series=\"mapped\""), std::string::npos) << "mapped bytes are hidden by default";
  EXPECT_NE(r.dom.find("id=\"mt-show-mapped\" aria-pressed=\"false\""), std::string::npos)
      << "the legend has the mapped toggle, off";
  EXPECT_EQ(r.dom.find("data-series=\"resident"), std::string::npos) << "no resident samples, no resident line";
  EXPECT_NE(r.dom.find("class=\"mt-peak\""), std::string::npos);
  EXPECT_NE(r.dom.find("peak 484 KiB at 6.000 ms"), std::string::npos);  // 120 * 4096 + 4096 B at sample 120
  EXPECT_EQ(count_of(r.dom, "class=\"mt-marker\""), 6u);
  EXPECT_NE(r.dom.find(">warmup</text>"), std::string::npos);
  EXPECT_NE(r.dom.find(" ms</text>"), std::string::npos) << "the time axis is in milliseconds";
  EXPECT_EQ(r.dom.find(" MiB</text>"), std::string::npos) << "mapped hidden: the byte axis scales to the heap";
  EXPECT_NE(r.dom.find(" KiB</text>"), std::string::npos) << "the byte axis is in KiB (the heap peaks at 484 KiB)";
  // The flame graph of the heap at the peak, with the known names as labels.
  const std::string flame = flame_svg(r.dom);
  ASSERT_NE(flame, "");
  EXPECT_NE(flame.find("data-kind=\"peak\""), std::string::npos);
  for (const char* name :
       {"all", "main", "parse_config", "build_index", "alloc_buffer", "std::vector&lt;int&gt;::_M_realloc_insert"}) {
    EXPECT_TRUE(has_label(flame, name)) << name;
  }
  // 10% of a 1280-pixel page is too narrow for the whole name: truncated with an ellipsis.
  EXPECT_NE(flame.find(">leaky_cache_"), std::string::npos);
  EXPECT_NE(flame.find("\u2026</text>"), std::string::npos);
  // The hostile name is text, never markup.
  EXPECT_EQ(r.dom.find("<b id=\"injected\">"), std::string::npos);
  EXPECT_NE(r.dom.find("&lt;/script&gt;&lt;b id=\"injected\"&gt;evil&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(r.dom.find("Pruned to keep the page small: 1,234 frames below 0.1% of the total"), std::string::npos);
  // Tables: the top sites with their stacks, the summary in order.
  EXPECT_NE(r.dom.find("data-ranking=\"peak\""), std::string::npos);
  EXPECT_NE(r.dom.find("<code class=\"mt-site-label\" title=\"alloc_buffer\">alloc_buffer</code> <span "
                       "class=\"mt-loc\">in prog</span> <span class=\"mt-loc\">src/0.cpp:10</span>"),
            std::string::npos);
  EXPECT_NE(r.dom.find("src/1.cpp:11 · /usr/lib/prog · 0x401010"), std::string::npos);
  const std::size_t events = r.dom.find("<th>events</th>"), peak = r.dom.find("<th>peak heap bytes</th>"),
                    alloc = r.dom.find("<th>allocator</th>");
  EXPECT_TRUE(events < peak && peak < alloc && alloc != std::string::npos) << "summary rows out of order";
  EXPECT_NE(r.dom.find("495,616 (484 KiB)"), std::string::npos);
  EXPECT_NE(r.dom.find("<code>./prog --input 'data file.txt'</code>"), std::string::npos);
  expect_drawn_screenshot(r);
  report_size_and_time("small report (200 samples x 2 + 2 processes, 8 + 8 + 3 frames)", page, r);
}

// A big page: every series and flame graph larger than the generator writes, so the page itself must keep the
// drawing bounded by pixels.
void check_large_report(const mt::FixtureShape& shape, const std::string& tag, const std::string& what) {
  const std::string json = mt::make_report_json(shape);
  ASSERT_EQ(mt::count_nodes(mt::big_tree(shape.flame_nodes, 1)), shape.flame_nodes);
  const std::string page = render_report_html(json);
  const mt::BrowserResult r = load_clean(write_page(tag, page), tag, true);
  EXPECT_EQ(mt::html_attribute(r.dom, "data-rendered"), "yes");
  // At most 4 points drawn per pixel column of a 1280-pixel-wide page, whatever the number of samples.
  std::size_t series = 0;
  for (std::size_t at = r.dom.find("data-series=\""); at != std::string::npos;
       at = r.dom.find("data-series=\"", at + 1)) {
    ++series;
    const std::string name = attribute_at(r.dom, at, "data-series"), drawn = attribute_at(r.dom, at, "data-points");
    ASSERT_NE(drawn, "") << name;
    EXPECT_LE(std::stoul(drawn), std::min<std::size_t>(4 * 1280, shape.points + 1)) << name;
    EXPECT_GE(std::stoul(drawn), std::min<std::size_t>(400, shape.points)) << name;
  }
  EXPECT_EQ(series, 1u) << "the live heap; mapped bytes are off by default";
  const std::string flame = flame_svg(r.dom);
  for (const char* name : {"main", "run_workload", "build_index", "alloc_buffer"}) {
    EXPECT_TRUE(has_label(flame, name)) << name;
  }
  const std::string drawn = attribute_at(flame, 0, "data-frames-drawn");
  ASSERT_NE(drawn, "");
  EXPECT_LT(std::stoul(drawn), shape.flame_nodes) << "frames narrower than half a pixel are skipped";
  EXPECT_NE(r.dom.find("frames are too narrow to draw at this zoom"), std::string::npos);
  EXPECT_EQ(count_of(r.dom, "<tr><td class=\"mt-num\">"), shape.sites) << "the top table's rows";
  expect_drawn_screenshot(r);
  report_size_and_time(what + " (" + drawn + " frames drawn)", page, r);
}

TEST(ReportBrowser, BigReportDrawsWithinPixelBudgets) {
  SKIP_WITHOUT_CHROMIUM();
  check_large_report(mt::kBig, "big",
                     "big report (20,000 samples x 2 + 4 processes, 3 x 20,000 frames, 5 x 100 sites)");
}

// What the generator aims for (about 2,000 samples per series, frames pruned below 0.1%): the size and time a
// user should expect from a big recording.
TEST(ReportBrowser, GeneratorSizedReport) {
  SKIP_WITHOUT_CHROMIUM();
  check_large_report(mt::kGeneratorSized, "generator-sized",
                     "generator-sized report (2,000 samples x 2 + 4 processes, 3 x 2,000 frames, 5 x 50 sites)");
}

namespace {

// Drives the page as a user would, through window.memtrackReport, and writes what it saw as key=value lines.
constexpr const char* kDriveScript = R"JS(
(function () {
  const r = window.memtrackReport, out = [];
  const put = (k, v) => out.push(k + '=' + String(v).replace(/\n/g, ' '));
  const time = (k, f) => { const t = performance.now(); const v = f(); put(k + '.ms', (performance.now() - t).toFixed(1)); return v; };
  const labels = () => Array.from(document.querySelectorAll('#mt-flame text')).map((t) => t.textContent);
  const flame = document.getElementById('mt-flame');
  put('zoom.ok', time('zoom', () => r.flame.zoomTo('build_index')));
  put('zoom.focus', flame.getAttribute('data-focus'));
  put('zoom.labels', labels().join('|'));
  put('zoom.status', document.getElementById('mt-flame-status').textContent);
  put('zoom.unknown', r.flame.zoomTo('no_such_function'));
  put('reset.ok', time('reset', () => r.flame.reset()));
  put('reset.focus', flame.getAttribute('data-focus'));
  const s = time('search', () => r.flame.search('alloc_buffer'));
  put('search.frames', s.frames); put('search.bytes', s.bytes); put('search.share', s.share);
  put('search.highlighted', document.querySelectorAll('#mt-flame rect[fill="#d63fd6"]').length);
  const re = r.flame.search('/^(parse|build)_/');
  put('regex.frames', re.frames); put('regex.bytes', re.bytes);
  put('search.cleared', r.flame.search('') === null);
  put('tooltip', r.flame.tooltip('alloc_buffer'));
  put('tab.allocated', time('tab', () => r.flame.show('allocated')));
  put('tab.kind', flame.getAttribute('data-kind'));
  put('tab.leaked', r.flame.show('leaked'));
  put('tab.leaked.labels', labels().join('|'));
  r.flame.show('peak');
  put('view.process', time('view', () => r.timeline.setView('process')));
  put('view.lines', Array.from(document.querySelectorAll('#mt-chart .mt-line')).map((p) => p.getAttribute('data-series')).join('|'));
  put('view.legend', document.querySelector('#mt-timeline .mt-legend').textContent);
  put('view.peaks', document.querySelectorAll('#mt-chart .mt-process-peak').length);
  r.timeline.setView('whole');
  const peak = r.data.timeline.peak;
  put('hover', r.timeline.hoverAt(peak.t_ns));
  r.timeline.unhover();
  put('axis.default', Array.from(document.querySelectorAll('#mt-chart .mt-y-axis text')).map((t) => t.textContent).join('|'));
  const before = r.timeline.pointsDrawn();
  time('timezoom', () => r.timeline.zoom(peak.t_ns * 0.9, peak.t_ns * 1.1));
  put('timezoom.points', r.timeline.pointsDrawn().join('|') + ' of ' + before.join('|'));
  put('timezoom.reset', document.querySelector('#mt-timeline button:last-of-type').disabled);
  r.timeline.reset();
  r.top.show('peak');
  const siteLabels = Array.from(document.querySelectorAll('table.mt-top code.mt-site-label'));
  put('top.label2', siteLabels[2].textContent + ' | ' + siteLabels[2].title + ' | ' + siteLabels[2].parentNode.textContent);
  put('top.label3', siteLabels[3].textContent);
  put('top.count', document.querySelector('.mt-top-count').textContent);
  r.top.show('leaked');
  put('top.ranking', document.querySelector('table.mt-top').getAttribute('data-ranking'));
  put('top.ranked', document.querySelector('table.mt-top th.mt-ranked').textContent);

  // Then real events, as a user makes them: hover and click a frame, the reset button, typing in the search
  // box (debounced, hence the timer), a tab, hovering and brushing the chart.
  const tipText = () => (tip.hidden ? 'hidden' : tip.textContent);
  const tip = document.getElementById('mt-tooltip');
  const at = (target, fx, fy) => { const b = target.getBoundingClientRect(); return {bubbles: true, clientX: b.left + b.width * fx, clientY: b.top + b.height * fy}; };
  const frame = Array.from(document.querySelectorAll('#mt-flame rect[data-i]')).find((rc) => ['parse_config', 'run_workload'].includes(r.flame.frameName(+rc.getAttribute('data-i'))));
  frame.dispatchEvent(new MouseEvent('mousemove', at(frame, 0.5, 0.5)));
  put('event.tooltip', tipText());
  frame.dispatchEvent(new MouseEvent('click', at(frame, 0.5, 0.5)));
  put('event.click.focus', flame.getAttribute('data-focus'));
  Array.from(document.querySelectorAll('#mt-flames button')).find((b) => b.textContent === 'Reset zoom').click();
  put('event.reset.focus', flame.getAttribute('data-focus'));
  const input = document.getElementById('mt-flame-search');
  input.value = 'build_';
  input.dispatchEvent(new Event('input', {bubbles: true}));
  const overlay = () => document.getElementById('mt-overlay');
  overlay().dispatchEvent(new MouseEvent('mousemove', at(overlay(), 0.6, 0.5)));
  put('event.chart.tooltip', tipText());
  overlay().dispatchEvent(new MouseEvent('mousedown', at(overlay(), 0.2, 0.5)));
  overlay().dispatchEvent(new MouseEvent('mousemove', at(overlay(), 0.4, 0.5)));
  window.dispatchEvent(new MouseEvent('mouseup', at(overlay(), 0.4, 0.5)));
  const timeReset = Array.from(document.querySelectorAll('#mt-timeline button')).find((b) => b.textContent === 'Reset zoom');
  put('event.brush.reset.enabled', !timeReset.disabled);
  put('event.brush.axis', Array.from(document.querySelectorAll('#mt-chart .mt-x-axis text')).map((t) => t.textContent).join('|'));
  overlay().dispatchEvent(new MouseEvent('dblclick', at(overlay(), 0.5, 0.5)));
  put('event.dblclick.reset.enabled', !timeReset.disabled);
  // A process marker's head is above the hover overlay (the topmost element at its centre) and hovering it
  // shows the marker's tooltip.
  const head = document.querySelector('#mt-chart .mt-marker-head');
  const hb = head.getBoundingClientRect(), hx = hb.left + hb.width / 2, hy = hb.top + hb.height / 2;
  put('marker.top', document.elementFromPoint(hx, hy) === head);
  head.dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: hx, clientY: hy}));
  put('marker.tooltip', tipText());
  r.timeline.unhover();
  put('event.default.lines', Array.from(document.querySelectorAll('#mt-chart .mt-line')).map((p) => p.getAttribute('data-series')).join('|'));
  document.getElementById('mt-show-mapped').click();
  put('event.mapped.lines', Array.from(document.querySelectorAll('#mt-chart .mt-line')).map((p) => p.getAttribute('data-series')).join('|'));
  put('event.mapped.pressed', document.getElementById('mt-show-mapped').getAttribute('aria-pressed'));
  put('event.mapped.axis', Array.from(document.querySelectorAll('#mt-chart .mt-y-axis text')).map((t) => t.textContent).join('|'));
  put('event.mapped.hover', r.timeline.hoverAt(peak.t_ns));
  r.timeline.unhover();
  document.getElementById('mt-show-mapped').click();
  put('event.unmapped.lines', Array.from(document.querySelectorAll('#mt-chart .mt-line')).map((p) => p.getAttribute('data-series')).join('|'));
  setTimeout(() => {
    put('event.search.status', document.getElementById('mt-flame-status').textContent);
    put('event.search.highlighted', document.querySelectorAll('#mt-flame rect[fill="#d63fd6"]').length);
    document.querySelector('#mt-flames button[data-key="leaked"]').click();
    put('event.tab.kind', flame.getAttribute('data-kind'));
    const pre = document.createElement('pre');
    pre.id = 'mt-test-results';
    pre.textContent = out.join('\n');
    document.body.appendChild(pre);
  }, 500);
})();
)JS";

std::string value_or(const std::map<std::string, std::string>& m, const std::string& k) {
  const auto it = m.find(k);
  return it == m.end() ? "<absent>" : it->second;
}

}  // namespace

TEST(ReportBrowser, ZoomSearchTooltipsAndViewsOnTheSmallReport) {
  SKIP_WITHOUT_CHROMIUM();
  const std::string page = render_report_html(mt::make_report_json(mt::kSmall), {.test_script = kDriveScript});
  const mt::BrowserResult r = load_clean(write_page("small-driven", page), "small-driven", false, 5000);
  const auto res = mt::test_results(r.dom);
  ASSERT_FALSE(res.empty()) << "the test hook wrote nothing";
  EXPECT_EQ(value_or(res, "zoom.ok"), "true");
  EXPECT_EQ(value_or(res, "zoom.focus"), "build_index");
  // Zoomed: the ancestors and the subtree, not the siblings.
  EXPECT_EQ(value_or(res, "zoom.labels"),
            "main|all|build_index|std::vector&lt;int&gt;::_M_realloc_insert|alloc_buffer");
  EXPECT_NE(value_or(res, "zoom.status").find("Zoomed into main › build_index: 488 KiB (50.0%)"), std::string::npos)
      << value_or(res, "zoom.status");
  EXPECT_EQ(value_or(res, "zoom.unknown"), "false");
  EXPECT_EQ(value_or(res, "reset.focus"), "all");
  EXPECT_EQ(value_or(res, "search.frames"), "2");
  EXPECT_EQ(value_or(res, "search.bytes"), std::to_string(mt::kAllocBufferBytes));
  EXPECT_EQ(value_or(res, "search.share"), "0.35");
  EXPECT_EQ(value_or(res, "search.highlighted"), "2");
  EXPECT_EQ(value_or(res, "regex.frames"), "2");
  EXPECT_EQ(value_or(res, "regex.bytes"), std::to_string(mt::kParseAndBuildBytes));
  EXPECT_EQ(value_or(res, "search.cleared"), "true");
  const std::string tip = value_or(res, "tooltip");
  for (const char* part : {"alloc_buffer", "146 KiB live at the peak (150,000 B), 15.0% of all",
                           "blocks live at the peak: 15", "module: libbuf.so", "source: src/buffer.cpp:42"}) {
    EXPECT_NE(tip.find(part), std::string::npos) << part << " not in: " << tip;
  }
  EXPECT_EQ(value_or(res, "tab.allocated"), "true");
  EXPECT_EQ(value_or(res, "tab.kind"), "allocated");
  EXPECT_EQ(value_or(res, "tab.leaked"), "true");
  EXPECT_EQ(value_or(res, "tab.leaked.labels"), "all|main|leaky_cache_insert");
  EXPECT_EQ(value_or(res, "view.process"), "true");
  EXPECT_EQ(value_or(res, "view.lines"), "./prog (pid 1000)|worker 1 (pid 1001)");
  EXPECT_EQ(value_or(res, "view.peaks"), "2");
  EXPECT_NE(value_or(res, "hover").find("live heap: 484 KiB (495,616 B)"), std::string::npos) << value_or(res, "hover");
  // Mapped bytes hidden by default: not in the tooltip, the axis scaled to the heap (shown after the toggle below).
  EXPECT_EQ(value_or(res, "hover").find("mapped: "), std::string::npos) << value_or(res, "hover");
  EXPECT_EQ(value_or(res, "axis.default").find("MiB"), std::string::npos) << value_or(res, "axis.default");
  EXPECT_EQ(value_or(res, "timezoom.reset"), "false") << "zoomed in: the reset button is enabled";
  // Labelled past the allocation wrappers, template arguments shortened (the full name on hover), the
  // module by its name; a frame without a name as `memtrack top` shows it.
  // (The harness hands values over as HTML text: < and > arrive escaped.)
  auto as_text = [](std::string v) {
    std::string o;
    for (const char ch : v) o += ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : std::string(1, ch);
    return o;
  };
  EXPECT_EQ(
      value_or(res, "top.label2"),
      as_text("std::vector<>::push_back(int) | " + std::string(mt::kTemplateCaller) +
              " | std::vector<>::push_back(int) in prog src/2.cpp:12 via xmalloc \u2190 operator new(unsigned long)"));
  EXPECT_EQ(value_or(res, "top.label3"), "?? prog +0x401000");
  EXPECT_EQ(value_or(res, "top.count"), "The first 8 of 20 sites (memtrack top FILE -n 0 lists all).");
  EXPECT_EQ(value_or(res, "top.ranking"), "leaked");
  EXPECT_EQ(value_or(res, "top.ranked"), "Leaked");
  // Real events.
  EXPECT_NE(value_or(res, "event.tooltip").find("parse_config293 KiB live at the peak (300,000 B), 30.0% of all"),
            std::string::npos)
      << value_or(res, "event.tooltip");
  EXPECT_NE(value_or(res, "event.tooltip").find("source: src/config.cpp:17"), std::string::npos);
  EXPECT_EQ(value_or(res, "event.click.focus"), "parse_config");
  EXPECT_EQ(value_or(res, "event.reset.focus"), "all");
  EXPECT_NE(value_or(res, "event.chart.tooltip").find("live heap: "), std::string::npos)
      << value_or(res, "event.chart.tooltip");
  EXPECT_EQ(value_or(res, "event.brush.reset.enabled"), "true");
  // Brushed from 20% to 40% of a 9.95 ms run: the axis now spans about 2 to 4 ms.
  EXPECT_NE(value_or(res, "event.brush.axis").find("3 ms"), std::string::npos) << value_or(res, "event.brush.axis");
  const std::string axis = "|" + value_or(res, "event.brush.axis") + "|";
  EXPECT_EQ(axis.find("|8 ms|"), std::string::npos) << axis;
  EXPECT_EQ(value_or(res, "event.dblclick.reset.enabled"), "false");
  EXPECT_EQ(value_or(res, "marker.top"), "true") << "the marker's head is not under the hover overlay";
  EXPECT_NE(value_or(res, "marker.tooltip").find(" pid 1000"), std::string::npos) << value_or(res, "marker.tooltip");
  EXPECT_NE(value_or(res, "marker.tooltip").find(" at "), std::string::npos) << value_or(res, "marker.tooltip");
  EXPECT_EQ(value_or(res, "event.default.lines"), "live heap");
  EXPECT_EQ(value_or(res, "event.mapped.lines"), "live heap|mapped") << "the legend toggle shows mapped bytes";
  EXPECT_EQ(value_or(res, "event.mapped.pressed"), "true");
  EXPECT_NE(value_or(res, "event.mapped.axis").find(" MiB"), std::string::npos)
      << "the axis rescales to mapped's 8.5 MiB: " << value_or(res, "event.mapped.axis");
  EXPECT_NE(value_or(res, "event.mapped.hover").find("mapped: 8.47 MiB"), std::string::npos)
      << value_or(res, "event.mapped.hover");
  EXPECT_EQ(value_or(res, "event.unmapped.lines"), "live heap") << "a second click hides them again";
  EXPECT_NE(value_or(res, "event.search.status").find("Search \"build_\": 1 frames, 488 KiB = 50.0% of the graph."),
            std::string::npos)
      << value_or(res, "event.search.status");
  EXPECT_EQ(value_or(res, "event.search.highlighted"), "1");
  EXPECT_EQ(value_or(res, "event.tab.kind"), "leaked");
}

namespace {

// What the differential page shows, through window.memtrackReport, as key=value lines.
constexpr const char* kDiffScript = R"JS(
(function () {
  const r = window.memtrackReport, out = [];
  const put = (k, v) => out.push(k + '=' + String(v).replace(/\n/g, ' '));
  for (const name of ['all', 'build_index', 'parse_config', 'leaky_cache_insert', 'dropped_cache']) {
    const f = r.flame.frame(name);
    put('frame.' + name, f ? f.value + ' ' + f.base + ' ' + f.color : 'absent');
  }
  const evil = r.flame.frame(r.data.flame.peak.children[1].name);
  put('frame.evil', evil.value + ' ' + evil.base + ' ' + evil.color);
  const drawn = Array.from(document.querySelectorAll('#mt-flame rect[data-i]')).map((rc) => r.flame.frameName(+rc.getAttribute('data-i')));
  put('drawn', drawn.join('|'));
  const rect = Array.from(document.querySelectorAll('#mt-flame rect[data-i]')).find((rc) => r.flame.frameName(+rc.getAttribute('data-i')) === 'build_index');
  put('fill.build_index', rect ? rect.getAttribute('fill') : 'none');
  put('status', document.getElementById('mt-flame-status').textContent);
  put('note', document.getElementById('mt-flame-baseline').textContent);
  put('legend', document.getElementById('mt-flame-legend').textContent);
  put('header', document.getElementById('mt-meta').textContent);
  put('tooltip', r.flame.tooltip('build_index'));
  put('tooltip.new', r.flame.tooltip('leaky_cache_insert'));
  const dashed = Array.from(document.querySelectorAll('#mt-chart .mt-line')).filter((p) => p.getAttribute('stroke-dasharray'));
  put('dashed', dashed.map((p) => p.getAttribute('data-series')).join('|'));
  put('search.highlight', (r.flame.search('build_index'), r.flame.frame('build_index').color));
  r.flame.search('');
  r.flame.show('leaked');
  put('leaked.main', r.flame.frame('main').value + ' ' + r.flame.frame('main').base + ' ' + r.flame.frame('main').color);
  r.flame.show('peak');
  r.timeline.unhover();
  const pre = document.createElement('pre');
  pre.id = 'mt-test-results';
  pre.textContent = out.join('\n');
  document.body.appendChild(pre);
})();
)JS";

}  // namespace

// `memtrack report --baseline`: the flame graphs are differential (width = this recording's bytes, red grown,
// blue shrunk, grey unchanged), the baseline's heap is drawn dashed beside the recording's, and the page says
// which two recordings it compares and how their sites were paired.
// Resident memory (timeline.resident, from the artifact's Resident samples): a line in the whole view and a
// dashed one per pid in the per-process view, drawn as steps (a sample's value holds until the next), in the
// tooltip with the value of the last sample at or before the time; without it the chart is as before (the
// small report above has none: two lines, no resident note).
TEST(ReportBrowser, ResidentMemoryIsDrawnWholeAndPerProcess) {
  SKIP_WITHOUT_CHROMIUM();
  const std::string json = R"({"version": 1, "meta": {"command": ["./prog"], "events": 4, "duration_ns": 4000000},
    "timeline": {"t_ns": [0, 1000000, 2000000, 3000000], "heap": [0, 1048576, 2097152, 1048576],
                 "processes": [{"pid": 7, "label": "pid 7 ./prog", "t_ns": [0, 1000000, 2000000, 3000000],
                                "heap": [0, 1048576, 2097152, 1048576]}],
                 "markers": [{"t_ns": 0, "kind": "start", "pid": 7}, {"t_ns": 3500000, "kind": "exit", "pid": 7}],
                 "resident": {"t_ns": [500000, 1500000, 2500000, 3500000],
                              "bytes": [3145728, 4194304, 6291456, 5242880],
                              "processes": [{"pid": 7, "t_ns": [500000, 1500000, 2500000, 3500000],
                                             "bytes": [3145728, 4194304, 6291456, 5242880]}]}}})";
  constexpr const char* kScript = R"JS(
(function () {
  const r = window.memtrackReport, out = [];
  const put = (k, v) => out.push(k + '=' + String(v).replace(/\n/g, ' '));
  const lines = () => Array.from(document.querySelectorAll('#mt-chart .mt-line'));
  put('whole.lines', lines().map((p) => p.getAttribute('data-series')).join('|'));
  const res = lines().find((p) => p.getAttribute('data-series') === 'resident');
  put('whole.resident.d', res ? res.getAttribute('d') : 'none');
  const heap = lines().find((p) => p.getAttribute('data-series') === 'live heap');
  put('whole.heap.d', heap ? heap.getAttribute('d') : 'none');
  put('whole.legend', document.querySelector('#mt-timeline .mt-legend').textContent);
  put('whole.notes', document.querySelector('#mt-timeline p.mt-note').textContent);
  put('hover', r.timeline.hoverAt(2900000));
  r.timeline.unhover();
  put('resident.pressed', document.getElementById('mt-show-resident').getAttribute('aria-pressed'));
  document.getElementById('mt-show-resident').click();
  put('resident.hidden.lines', lines().map((p) => p.getAttribute('data-series')).join('|'));
  put('resident.hidden.pressed', document.getElementById('mt-show-resident').getAttribute('aria-pressed'));
  put('resident.hidden.axis', Array.from(document.querySelectorAll('#mt-chart .mt-y-axis text')).map((t) => t.textContent).join('|'));
  document.getElementById('mt-show-resident').click();
  put('resident.shown.lines', lines().map((p) => p.getAttribute('data-series')).join('|'));
  put('resident.shown.axis', Array.from(document.querySelectorAll('#mt-chart .mt-y-axis text')).map((t) => t.textContent).join('|'));
  put('view.process', r.timeline.setView('process'));
  put('process.lines', lines().map((p) => p.getAttribute('data-series') + ':' + (p.getAttribute('stroke-dasharray') || '-') + ':' + p.getAttribute('stroke')).join('|'));
  for (const v of ['whole', 'process']) {
    r.timeline.setView(v);
    // A pid's resident line is its heap line's colour, dashed, on purpose: left out of the comparison.
    put(v + '.swatches', Array.from(document.querySelectorAll('#mt-timeline .mt-legend span')).filter((e) => !e.textContent.startsWith('resident (pid')).map((e) => e.style.getPropertyValue('--swatch').trim()).join('|'));
  }
  const pre = document.createElement('pre');
  pre.id = 'mt-test-results';
  pre.textContent = out.join('\n');
  document.body.appendChild(pre);
})();
)JS";
  const std::string page = render_report_html(json, {.test_script = kScript});
  const mt::BrowserResult r = load_clean(write_page("resident", page), "resident", true);
  const auto res = mt::test_results(r.dom);
  ASSERT_FALSE(res.empty()) << "the test hook wrote nothing";
  EXPECT_EQ(value_or(res, "whole.lines"), "live heap|resident");
  // Steps: 4 samples make 7 vertices (each later one preceded by a corner at the previous value).
  const std::string d = value_or(res, "whole.resident.d");
  EXPECT_EQ(std::count(d.begin(), d.end(), 'L'), 6) << d;
  // The heap moves only at events, so it is drawn as steps too: M0 then per later sample a horizontal run at
  // the previous value and a vertical edge (no ramp between samples).
  const std::string hd = value_or(res, "whole.heap.d");
  EXPECT_EQ(std::count(hd.begin(), hd.end(), 'L'), 6) << hd;
  {
    std::vector<std::pair<std::string, std::string>> xy;
    std::stringstream ss(hd.substr(1));
    for (std::string v; std::getline(ss, v, 'L');) xy.emplace_back(v.substr(0, v.find(',')), v.substr(v.find(',') + 1));
    ASSERT_EQ(xy.size(), 7u) << hd;
    for (size_t i = 1; i < xy.size(); i += 2) {
      EXPECT_EQ(xy[i].second, xy[i - 1].second) << "a horizontal run at the previous value: " << hd;
      EXPECT_EQ(xy[i + 1].first, xy[i].first) << "then a vertical edge: " << hd;
    }
  }
  // Every legend swatch in a view has a colour of its own (markers included: the legend lists them here).
  for (const char* v : {"whole.swatches", "process.swatches"}) {
    std::stringstream ss(value_or(res, v));
    std::set<std::string> seen;
    size_t n = 0;
    for (std::string c; std::getline(ss, c, '|'); ++n) EXPECT_TRUE(seen.insert(c).second) << v << " repeats " << c;
    EXPECT_GE(n, 2u) << v;
  }
  EXPECT_NE(value_or(res, "whole.legend").find("resident (max 6.00 MiB)"), std::string::npos)
      << value_or(res, "whole.legend");
  EXPECT_NE(value_or(res, "whole.notes").find("Resident: the memory the processes held in RAM"), std::string::npos);
  // At 2.9 ms the last resident sample is the one at 2.5 ms (6 MiB), the heap's the one at 2 ms (2 MiB).
  const std::string hover = value_or(res, "hover");
  EXPECT_NE(hover.find("resident: 6.00 MiB (6,291,456 B)"), std::string::npos) << hover;
  EXPECT_NE(hover.find("live heap: 2.00 MiB"), std::string::npos) << hover;
  // Resident memory is shown by default and hidden by its legend toggle (it can dwarf the heap, as mapped
  // bytes can): the axis then scales to the heap's 2 MiB, not resident's 6.
  EXPECT_EQ(value_or(res, "resident.pressed"), "true");
  EXPECT_EQ(value_or(res, "resident.hidden.lines"), "live heap");
  EXPECT_EQ(value_or(res, "resident.hidden.pressed"), "false");
  EXPECT_NE(value_or(res, "resident.shown.axis").find("6 MiB"), std::string::npos)
      << value_or(res, "resident.shown.axis");
  EXPECT_EQ(value_or(res, "resident.hidden.axis").find("6 MiB"), std::string::npos)
      << value_or(res, "resident.hidden.axis");
  EXPECT_EQ(value_or(res, "resident.shown.lines"), "live heap|resident");
  EXPECT_EQ(value_or(res, "view.process"), "true");
  // The pid's resident line is dashed, in its heap line's colour.
  const std::string lines = value_or(res, "process.lines");
  const std::string heap_color =
      lines.substr(lines.rfind(':', lines.find('|')) + 1, lines.find('|') - lines.rfind(':', lines.find('|')) - 1);
  // The label names the pid already: no second "(pid 7)".
  EXPECT_EQ(lines, "pid 7 ./prog:-:" + heap_color + "|resident (pid 7):5,3:" + heap_color);
}

// A fork-heavy recording: beyond 20 markers in view they are drawn per 4-pixel bucket, each with its count,
// instead of one dashed line per process start and exit; the counts add up to every marker.
TEST(ReportBrowser, ManyProcessMarkersAreAggregated) {
  SKIP_WITHOUT_CHROMIUM();
  std::string markers;
  for (int i = 0; i < 40; ++i) {
    const long t = 10000L * i;  // 40 starts within 0.4 ms of a 4 ms chart: a few pixels apart
    markers += std::string(markers.empty() ? "" : ", ") + R"({"t_ns": )" + std::to_string(t) +
               R"(, "kind": "start", "pid": )" + std::to_string(100 + i) + R"(}, {"t_ns": )" +
               std::to_string(t + 5000) + R"(, "kind": "exit", "pid": )" + std::to_string(100 + i) + "}";
  }
  const std::string json = R"({"version": 1, "meta": {"command": ["./prog"], "events": 4, "duration_ns": 4000000},
    "timeline": {"t_ns": [0, 1000000, 2000000, 3000000], "heap": [0, 1048576, 2097152, 1048576],
                 "markers": [)" +
                           markers + "]}}";
  constexpr const char* kScript = R"JS(
(function () {
  const out = [];
  const put = (k, v) => out.push(k + '=' + String(v).replace(/\n/g, ' '));
  put('single', document.querySelectorAll('#mt-chart .mt-marker').length);
  const b = Array.from(document.querySelectorAll('#mt-chart .mt-marker-bucket'));
  put('buckets', b.length);
  put('sum', b.reduce((a, e) => a + Number(e.getAttribute('data-count')), 0));
  put('titled', b.filter((e) => /^\d+ process (start|exit)/.test(e.textContent)).length);
  const pre = document.createElement('pre');
  pre.id = 'mt-test-results';
  pre.textContent = out.join('\n');
  document.body.appendChild(pre);
})();
)JS";
  const std::string page = render_report_html(json, {.test_script = kScript});
  const mt::BrowserResult r = load_clean(write_page("markers", page), "markers", true);
  const auto res = mt::test_results(r.dom);
  ASSERT_FALSE(res.empty()) << "the test hook wrote nothing";
  EXPECT_EQ(value_or(res, "single"), "0");
  EXPECT_EQ(value_or(res, "sum"), "80");
  const int buckets = std::stoi(value_or(res, "buckets"));
  EXPECT_GT(buckets, 1);
  EXPECT_LT(buckets, 80) << "markers 4 px apart or closer share a bucket";
  EXPECT_EQ(value_or(res, "titled"), value_or(res, "buckets")) << "every bucket says its count";
}

TEST(ReportBrowser, DifferentialFlameGraphAgainstABaseline) {
  SKIP_WITHOUT_CHROMIUM();
  const std::string page =
      render_report_html(mt::make_report_json(mt::kSmallAgainstBaseline), {.test_script = kDiffScript});
  const mt::BrowserResult r = load_clean(write_page("baseline", page), "baseline", true);
  const auto res = mt::test_results(r.dom);
  ASSERT_FALSE(res.empty()) << "the test hook wrote nothing";
  // Colour by the change relative to the larger side: lightness 84% - 40% x |change| / max(head, base).
  EXPECT_EQ(value_or(res, "frame.all"), "1000000 900000 hsl(4,80%,80%)");            // +10%
  EXPECT_EQ(value_or(res, "frame.build_index"), "500000 200000 hsl(4,80%,60%)");     // +300k of 500k
  EXPECT_EQ(value_or(res, "frame.parse_config"), "300000 300000 hsl(220,10%,80%)");  // unchanged
  EXPECT_EQ(value_or(res, "frame.leaky_cache_insert"), "100000 0 hsl(4,80%,44%)");   // new: the deepest red
  EXPECT_EQ(value_or(res, "frame.dropped_cache"), "0 150000 hsl(214,80%,44%)");      // gone
  EXPECT_EQ(value_or(res, "frame.evil"), "100000 250000 hsl(214,80%,60%)");          // -150k of 250k
  // A gone frame has no width: not drawn, and the status line says how much of the baseline that is.
  EXPECT_EQ(value_or(res, "fill.build_index"), "hsl(4,80%,60%)") << "the drawn colour";
  EXPECT_EQ(value_or(res, "drawn").find("dropped_cache"), std::string::npos) << value_or(res, "drawn");
  EXPECT_NE(value_or(res, "drawn").find("leaky_cache_insert"), std::string::npos) << value_or(res, "drawn");
  const std::string status = value_or(res, "status");
  EXPECT_NE(status.find("Against the baseline base.mt: 879 KiB (+97.7 KiB, +11.1%)"), std::string::npos) << status;
  EXPECT_NE(status.find("146 KiB of the baseline are in frames with nothing here"), std::string::npos) << status;
  EXPECT_NE(value_or(res, "note").find("Baseline base.mt: sites paired by function, file and module name (fixture)"),
            std::string::npos)
      << value_or(res, "note");
  EXPECT_EQ(value_or(res, "legend"), "grewnewshrankunchanged");
  EXPECT_NE(value_or(res, "header").find("Compared with the baseline base.mt: peak heap 363 KiB → 484 KiB"),
            std::string::npos)
      << value_or(res, "header");
  const std::string tip = value_or(res, "tooltip");
  for (const char* part :
       {"488 KiB live at the peak (500,000 B)", "baseline: 195 KiB (200,000 B)", "change: +293 KiB, +150.0%"})
    EXPECT_NE(tip.find(part), std::string::npos) << part << " not in: " << tip;
  EXPECT_NE(value_or(res, "tooltip.new").find("change: new (+97.7 KiB)"), std::string::npos)
      << value_or(res, "tooltip.new");
  EXPECT_EQ(value_or(res, "dashed"), "baseline live heap (base.mt)");
  EXPECT_EQ(value_or(res, "search.highlight"), "#d63fd6") << "a search match is highlighted over the diff colour";
  EXPECT_EQ(value_or(res, "leaked.main"), "100000 200000 hsl(214,80%,64%)");  // half the baseline's
  expect_drawn_screenshot(r);
}

TEST(ReportBrowser, InteractionsStayFastOnTheBigReport) {
  SKIP_WITHOUT_CHROMIUM();
  const std::string page = render_report_html(mt::make_report_json(mt::kBig), {.test_script = kDriveScript});
  const mt::BrowserResult r = load_clean(write_page("big-driven", page), "big-driven", false, 5000);
  const auto res = mt::test_results(r.dom);
  ASSERT_FALSE(res.empty()) << "the test hook wrote nothing";
  EXPECT_EQ(value_or(res, "zoom.focus"), "build_index");
  EXPECT_EQ(value_or(res, "tab.kind"), "allocated");
  EXPECT_EQ(value_or(res, "view.lines"),
            "./prog (pid 1000)|worker 1 (pid 1001)|worker 2 (pid 1002)|worker 3 (pid 1003)");
  // Zoomed into 20% of the run, fewer samples are in view than in the whole.
  const std::string points = value_or(res, "timezoom.points");
  EXPECT_NE(points.find(" of "), std::string::npos);
  std::cout << "big report interactions (ms): zoom " << value_or(res, "zoom.ms") << ", reset "
            << value_or(res, "reset.ms") << ", search " << value_or(res, "search.ms") << ", first show of a tab "
            << value_or(res, "tab.ms") << ", per-process view " << value_or(res, "view.ms") << ", time zoom "
            << value_or(res, "timezoom.ms") << "; points drawn after the time zoom: " << points << "\n";
}

TEST(ReportBrowser, MissingSectionsAreExplainedNotFatal) {
  SKIP_WITHOUT_CHROMIUM();
  struct Case {
    const char* tag;
    std::string json;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"empty",
       "{}",
       {"data-missing=\"timeline\"", "data-missing=\"flame\"", "data-missing=\"top\"", "data-missing=\"summary\""}},
      {"no-stacks",
       R"({"meta": {"command": ["./a"], "events": 10, "duration_ns": 1000},
           "missing": {"flame": "No call stacks: recorded without --stacks.",
                       "timeline.markers": "No markers: the artifact predates context sections."},
           "timeline": {"t_ns": [0, 500, 1000], "heap": [0, 64, 0]},
           "summary": [["events", 10], ["1", "integer-like key kept in place"]]})",
       {"No call stacks: recorded without --stacks.", "data-missing=\"top\"", "id=\"mt-chart\"",
        "No markers: the artifact predates context sections.", "highest sample 64 B at 500 ns",
        "<th>events</th><td class=\"mt-num\">10</td></tr><tr><th>1</th>"}},
      {"only-peak-graph",
       R"({"flame": {"peak": {"name": "all", "value": 10, "count": 1, "children": [{"name": "only_frame", "value": 10, "count": 1, "children": []}]}},
           "top": {"leaked": []}})",
       {">only_frame</text>", "data-key=\"allocated\" aria-selected=\"false\" disabled=\"\"",
        "No leaks: no site has blocks left at exit.", "does not say whether small frames were pruned"}},
      {"empty-leaks",
       R"({"flame": {"leaked": {"name": "all", "value": 0, "count": 0, "children": []}}})",
       {"No leaks: every block was freed before the program ended."}},
      {"invalid-json", R"({"meta": )", {"id=\"mt-fatal\"", "is not valid JSON", "data-rendered=\"no\""}},
      {"not-an-object", "[1, 2]", {"id=\"mt-fatal\"", "is not a JSON object"}},
      {"bad-shapes",
       R"({"timeline": {"t_ns": "oops", "heap": 3}, "flame": {"peak": {"name": null, "value": -5, "children": [7, null]}},
           "top": {"peak": [{"stack": null}, {}]}, "summary": 5})",
       {"The timeline has no samples", "[no stack]", "data-missing=\"summary\""}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.tag);
    const mt::BrowserResult r = load_clean(write_page(c.tag, render_report_html(c.json)), c.tag, false);
    for (const std::string& e : c.expected) EXPECT_NE(r.dom.find(e), std::string::npos) << e;
  }
}

// The checks above pass only if the page's error capture and Chromium's log work: a page that errs in each
// way they watch for must be caught by both.
TEST(ReportBrowser, TheHarnessCatchesErrorsAndBlockedLoads) {
  SKIP_WITHOUT_CHROMIUM();
  const char* script = R"JS(
    console.error('deliberate console.error');
    const img = document.createElement('img');
    img.src = 'http://192.0.2.1/tracker.png';  // TEST-NET-1: never routed, and the page's policy blocks it first
    document.body.appendChild(img);
    setTimeout(() => { throw new Error('deliberate uncaught error'); }, 10);
  )JS";
  const std::string page = render_report_html(mt::make_report_json(mt::kSmall), {.test_script = script});
  const mt::BrowserResult r = mt::load_in_chromium(write_page("erring", page), "erring", false, 2000);
  EXPECT_EQ(r.status, 0);
  const std::string messages = mt::html_attribute(r.dom, "data-error-messages");
  EXPECT_EQ(mt::html_attribute(r.dom, "data-errors"), "3") << messages;
  EXPECT_NE(messages.find("deliberate console.error"), std::string::npos) << messages;
  EXPECT_NE(messages.find("blocked load: http://192.0.2.1/tracker.png"), std::string::npos) << messages;
  EXPECT_NE(messages.find("deliberate uncaught error"), std::string::npos) << messages;
  EXPECT_NE(r.console_lines.find("deliberate console.error"), std::string::npos) << r.console_lines;
  EXPECT_NE(r.console_lines.find("Uncaught Error: deliberate uncaught error"), std::string::npos) << r.console_lines;
}
