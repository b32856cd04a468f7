"""Count the memory errors of a valgrind XML report that involve a given shared object.

usage: python valgrind_errors.py REPORT.xml OBJECT_SUBSTRING
Exits 1 when any error (leak records aside: the interpreter keeps its objects alive at
exit) has a stack frame in an object whose path contains the substring.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET


def main() -> int:
    report, needle = sys.argv[1], sys.argv[2]
    errors = [e for e in ET.parse(report).getroot().findall("error")
              if not (e.findtext("kind") or "").startswith("Leak_")]
    ours = []
    for err in errors:
        frames = err.findall("./stack/frame")
        if any(needle in (f.findtext("obj") or "") for f in frames):
            ours.append(err)
    print(f"valgrind: {len(errors)} errors in total, {len(ours)} with a frame in '{needle}'")
    for err in ours:
        print(err.findtext("kind"), err.findtext("what") or err.findtext("./xwhat/text"))
        for f in err.findall("./stack/frame"):
            print("   ", f.findtext("fn"), f.findtext("file"), f.findtext("line"), f.findtext("obj"))
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main())
