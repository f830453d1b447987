# Reads `memtrack top --json -n 0` on stdin and prints, per line of FILE (argv[1]), the peak bytes and the
# allocations of the sites whose innermost Python frame is that line: "LINE PEAK_BYTES ALLOCATIONS". A frame
# without a line (an instruction the code's location table gives none, such as a module's first, RESUME, in
# 3.12) counts for no line.
import json
import sys

per_line = {}
for site in json.load(sys.stdin)["sites"]:
    for frame in site["stack"]:
        if frame["module"] == "[python]":
            if frame["file"] == sys.argv[1] and frame.get("line") is not None:
                entry = per_line.setdefault(frame["line"], [0, 0])
                entry[0] += site["peak_bytes"]
                entry[1] += site["allocations"]
            break
for line, (peak, count) in sorted(per_line.items()):
    print(line, peak, count)
