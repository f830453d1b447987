// The page of `memtrack report`: one self-contained HTML file (every script and style inline, no network
// resource: a Content-Security-Policy in the page forbids any load) that renders one embedded JSON document.
//
// The report data (schema version 1). Every section and every field marked "optional" may be absent; the page
// then says what is missing (using missing[section] as the reason when given) instead of failing.
// Integers are JSON numbers; the page reads them as doubles, exact below 2^53 (addresses above that may be
// given as "0x..." strings). All times are nanoseconds since the first event of the recording.
//
//   {"version": 1,
//    "meta": {"command": [str], "memtrack": str, "events": int, "duration_ns": int, "artifact": str},
//    "baseline": {"artifact": str, "differential": bool, "match": str,   // optional: the recording this one
//                 "totals": {"base": Totals, "head": Totals}},          // is compared with (report --baseline);
//                 // differential: the flame graphs' nodes carry its values; match: how sites were paired
//    "missing": {str: str},                                // optional: why something is absent, shown as is;
//                 // keys: "timeline", "timeline.markers", "timeline.processes", "timeline.peak", "flame",
//                 // "flame.peak", "flame.allocated", "flame.leaked", "flame.resident", "flame.pruned",
//                 // "flame.baseline", "top", "top.<ranking>", "summary"
//    "summary": {str: str|number} | [[str, str|number]],   // a two-column table, in order; use the pair form
//                                                          // if a key looks like an integer (JS reorders those)
//    "timeline": {
//      "t_ns": [int], "heap": [int], "mapped": [int],      // one sample per t_ns, t_ns non-decreasing (the
//                                                          // page binary-searches it); "mapped" optional. When
//                                                          // downsampled, a sample should be its bucket's max
//      "peak": {"t_ns": int, "bytes": int},                // optional: the heap's exact peak, marked on the
//                                                          // chart (without it the highest sample is marked)
//      "processes": [{"pid": int, "label": str, "t_ns": [int], "heap": [int]}],  // optional
//      "resident": {"t_ns": [int], "bytes": [int],         // optional: resident memory of the processes alive
//                   "processes": [{"pid": int, "t_ns": [int], "bytes": [int]}]},  // and of each pid (0 from
//                   // its exit on); a value holds until the next sample (drawn as steps)
//      "markers": [{"t_ns": int, "kind": "start"|"exec"|"exit", "pid": int, "label": str}],  // optional
//      "regions": [{"name": str, "begin_ns": int, "end_ns": int}],                         // optional
//      "paused": [{"begin_ns": int, "end_ns": int, "source": str, "resumed": bool}],     // optional: spans
//                // where recording was paused (allocations not recorded, frees still are): the heap, mapped
//                // and per-process heap lines are broken there (nothing is known of them inside)
//      "baseline": {"label": str, "t_ns": [int], "heap": [int],  // optional: the baseline's live heap (its
//                   "peak": {"t_ns": int, "bytes": int}},  // times since its own first event), drawn dashed
//      "downsampled_from": int},                           // optional: samples before downsampling
//    "flame": {
//      "peak"|"allocated"|"leaked": Node,                  // heap live at the peak, all bytes allocated, leaks
//      "resident": Node,                                   // optional (only with page snapshots): resident bytes
//                                                          // per site at each process's highest snapshot, the
//                                                          // figures of `memtrack top --by resident`
//      "pruned": {"nodes": int, "bytes": int}              // frames dropped for being tiny, for all graphs,
//              | {"peak"|"allocated"|"leaked": {"nodes": int, "bytes": int, "threshold": number}}},  // or each
//    "top": {"peak"|"allocated"|"count"|"leaked"|"temporary": [Site],  // each list in its ranking's order
//            "frames": [Frame],  // each distinct frame of the lists once: a Site's "stack" has their indices
//            "total": number}}  // the recording's sites (the lists have the first of them)
//
//   Node = {"name": str, "value": int, "count": int, "module": str|null, "file": str|null, "line": int|null,
//           "base": int, "base_count": int,                // optional (a differential graph): the baseline's
//           "children": [Node]}
//     The root is the whole (its name is shown, e.g. "all"); its children are the outermost frames (main),
//     leaves the innermost. value is bytes (live at the peak, allocated, or leaked), count the blocks or
//     allocations; a node's value includes its children's (the page uses max(value, sum of children)), so a
//     pruned callee's bytes stay in its caller's value. The page sorts children by value, largest first.
//     In a differential graph (the root has "base") the width is value, the colour the change from base: red
//     grown, blue shrunk, grey equal; a node with value 0 (only in the baseline) has no width.
//   Totals = {"peak_bytes": int, "allocated_bytes": int, "allocations": int, "leaked_bytes": int, "events": int}
//   Site = {"stack": [int | Frame],                    // stack[0] is the innermost frame (the call site); an
//                                                       // int is an index into top.frames
//   Frame = {"function": str|null, "module": str|null, "file": str|null, "line": int|null,
//            "address": int|str|null}
//           "peak_bytes": int, "allocated_bytes": int, "allocations": int, "leaked_bytes": int,
//           "leaked_blocks": int, "temporary": int}    // temporary: allocations freed right after (heaptrack's)
//
// The page keeps itself fast on any input it is given (the chart draws at most a few points per pixel
// column, the flame graph skips frames narrower than half a pixel), but the generator should still downsample
// series to about 2,000 points and prune frames below about 0.1% of the root to keep the file small.
#pragma once

#include <string>
#include <string_view>

namespace memtrack::tools {

struct ReportPageOptions {
  // JavaScript run after the page rendered, for tests only (an empty string adds nothing). Inserted as the
  // body of a <script> element: the caller must not put "</script" in it.
  std::string_view test_script;
};

// The whole page with `json` embedded. Never fails: the JSON is not parsed here (invalid JSON makes the page
// say so), and whatever its bytes, they cannot end the script element that holds them (see escape_json).
std::string render_report_html(std::string_view json, const ReportPageOptions& options = {});

// `json` made safe to place inside <script type="application/json">: every '<', '>' and '&' becomes its
// \u00XX escape (JSON only allows them inside strings, where the escape means the same character), so no
// "</script" or "<!--" can appear; U+2028 and U+2029 become \u2028 and \u2029; bytes that are not valid UTF-8
// become \ufffd (a browser would show them as U+FFFD anyway, and JSON must be Unicode).
std::string escape_json(std::string_view json);

}  // namespace memtrack::tools
