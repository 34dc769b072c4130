#!/usr/bin/python3
"""Keeps docs/security.md's case table and the tests' checklist marks in agreement.

Each row of the table (between the `cases:begin` and `cases:end` comments) names a case id
of shared/RELIABILITY.md's checklist and the tests that reach it; the tests mark what they
reach with AMBER_CASE("id") (C++, inside a Catch2 TEST_CASE) or a comment
"checklist case: id" (Python scripts, fuzz targets). This check fails when a row's test
column differs from what the marks say, when a mark names an id the table lacks, or when a
row has no test without saying why ("none: ..."). `--write` rewrites the test column from
the marks.

Usage: check_security_cases.py SOURCE_DIR [--write]
"""
import os
import re
import sys

BEGIN, END = "<!-- cases:begin -->", "<!-- cases:end -->"


def marks(source_dir):
    """{case id: set of "`file`: test name" or "`file` (script)"} from the sources under tests/."""
    found = {}
    tests = os.path.join(source_dir, "tests")
    for root, _, files in os.walk(tests):
        for name in sorted(files):
            if not name.endswith((".cpp", ".py")) or name == os.path.basename(__file__):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, tests)
            text = open(path, encoding="utf-8").read()
            if name.endswith(".cpp") and "AMBER_CASE(" in text:
                current = None
                for m in re.finditer(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"|AMBER_CASE\("([^"]+)"\)', text):
                    if m.group(1) is not None:
                        current = m.group(1)
                    elif m.group(2) != "id":  # the macro's own definition
                        if current is None:
                            sys.exit(f"{rel}: AMBER_CASE(\"{m.group(2)}\") outside a TEST_CASE")
                        found.setdefault(m.group(2), set()).add(f"`{rel}`: {current}")
            for m in re.finditer(r"checklist case: ([\w.-]+)", text):
                what = "fuzz target" if rel.startswith("fuzz/") else "script"
                found.setdefault(m.group(1), set()).add(f"`{rel}` ({what})")
    return found


def column(entries):
    return "; ".join(sorted(entries))


def main():
    source_dir = sys.argv[1]
    write = "--write" in sys.argv
    doc_path = os.path.join(source_dir, "docs", "security.md")
    doc = open(doc_path, encoding="utf-8").read()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"{doc_path}: no case table between {BEGIN} and {END}")
    head, rest = doc.split(BEGIN, 1)
    table, tail = rest.split(END, 1)
    found = marks(source_dir)
    problems, rows, seen = [], [], set()
    for line in table.strip("\n").split("\n"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            rows.append(line)  # header and rule lines
            continue
        case = cells[0].strip("`")
        seen.add(case)
        want = column(found.get(case, ()))
        if not want:
            if not cells[2].startswith("none:"):
                problems.append(f"case {case}: no test marks it, and the table does not say why (none: ...)")
            rows.append(line)
            continue
        if cells[2] != want:
            problems.append(f"case {case}: the table says\n    {cells[2]}\n  the tests say\n    {want}")
        rows.append(f"| `{case}` | {cells[1]} | {want} |")
    for case in sorted(set(found) - seen):
        problems.append(f"case {case}: marked in {sorted(found[case])} but missing from the table")
    if write:
        open(doc_path, "w", encoding="utf-8").write(head + BEGIN + "\n" + "\n".join(rows) + "\n" + END + tail)
        print(f"rewrote {len(seen)} rows of {doc_path}")
        return
    for p in problems:
        print(p)
    if problems:
        sys.exit(f"{len(problems)} problem(s); run tests/check_security_cases.py {source_dir} --write "
                 "after adding marks or rows")
    marked = sum(1 for c in seen if c in found)
    print(f"security case table: {len(seen)} cases, {marked} reached by marked tests, "
          f"{len(seen) - marked} stating why not")


main()
