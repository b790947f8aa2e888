#!/usr/bin/env python3
"""Checks that the documentation says what the compiled examples do (the docs.snippets test).

README.md and every page under docs/ are read for fenced code blocks. A block may be marked by an
HTML comment on the line just above its opening fence:

  <!-- example: docs/examples/memory.cpp -->   the block's lines are lines of that file, in a row
                                               (the file may indent them more, by the same amount);
                                               the file must be one the tests compile and run
  <!-- output: memory -->                      the block's lines are lines of what the program
                                               named `memory` prints, in a row

An output marker may also stand right above a Markdown table, whose lines are then the block.

In README.md and docs/guide/, every ```cpp block must be marked `example:`, so that no C++ on
those pages is left unchecked. Links to files of the repository (and to headings of its Markdown
pages) in those pages must lead somewhere.

Usage: check_snippets.py SOURCE_DIR --compiled FILE... [--program NAME=EXECUTABLE...]
       [--python INTERPRETER]
Programs ending in .py run with --python; an output block whose program was not given (a build
without the Python package) is reported as not checked, not as a failure. Exits 1 on any failure.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^<!--\s*(example|output):\s*(\S+)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)\s*$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def blocks(path):
    """Yields (line number, language, marker or None, the block's lines) for each fenced block and
    each marked Markdown table (a marker line followed by lines that start with '|'). A marker with
    neither after it is yielded with language None and no lines."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        marker = MARKER.match(lines[i].strip())
        if marker and i + 1 < len(lines) and lines[i + 1].startswith("|"):
            i += 1
            start = i
            while i < len(lines) and lines[i].startswith("|"):
                i += 1
            yield start + 1, "table", (marker.group(1), marker.group(2)), lines[start:i]
            continue
        if marker and not (i + 1 < len(lines) and FENCE.match(lines[i + 1])):
            yield i + 1, None, (marker.group(1), marker.group(2)), []
            i += 1
            continue
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3)
        marker = MARKER.match(lines[i - 1].strip()) if i > 0 else None
        start = i
        body = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        yield start + 1, lang, (marker.group(1), marker.group(2)) if marker else None, body
        i += 1


def find_run(needle, haystack, allow_indent):
    """Whether needle's lines appear in haystack's lines in a row (haystack's indented alike when
    allow_indent). Returns (found, the longest prefix of needle matched somewhere, where it ended)."""
    needle = [l.rstrip() for l in needle]
    haystack = [l.rstrip() for l in haystack]
    best = (0, 0)
    for start in range(len(haystack)):
        indent = None
        k = 0
        while k < len(needle) and start + k < len(haystack):
            want, got = needle[k], haystack[start + k]
            if want == "":
                if got.strip() != "":
                    break
            else:
                if indent is None:
                    if not allow_indent and got != want:
                        break
                    if not got.endswith(want) or got[: len(got) - len(want)].strip() != "":
                        break
                    indent = got[: len(got) - len(want)]
                elif got != indent + want:
                    break
            k += 1
        if k == len(needle):
            return True, k, start
        if k > best[0]:
            best = (k, start + k)
    return False, best[0], best[1]


def slug(heading):
    """GitHub's anchor for a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    result = set()
    with open(path, encoding="utf-8") as f:
        in_code = False
        for line in f:
            if FENCE.match(line):
                in_code = not in_code
            elif not in_code and line.startswith("#"):
                result.add(slug(line.lstrip("#")))
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("source_dir")
    parser.add_argument("--compiled", nargs="+", default=[])
    parser.add_argument("--program", nargs="*", default=[])
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    root = os.path.abspath(args.source_dir)
    compiled = {os.path.normpath(os.path.join(root, c)) for c in args.compiled}
    programs = dict(p.split("=", 1) for p in args.program)
    outputs = {}
    failures = []
    checked = 0

    def output_of(name):
        if name not in outputs:
            exe = programs[name]
            cmd = [args.python, exe] if exe.endswith(".py") else [exe]
            with tempfile.TemporaryDirectory() as cwd:
                run = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
            if run.returncode != 0:
                failures.append(f"{name} exited with {run.returncode}:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
            outputs[name] = run.stdout.split("\n")
        return outputs[name]

    pages = [os.path.join(root, "README.md")]
    for folder, _, files in os.walk(os.path.join(root, "docs")):
        pages += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".md")]
    strict = lambda page: page == pages[0] or os.path.dirname(page) == os.path.join(root, "docs", "guide")

    for page in pages:
        name = os.path.relpath(page, root)
        for line, lang, marker, body in blocks(page):
            where = f"{name}:{line}"
            if marker is None:
                if lang == "cpp" and strict(page):
                    failures.append(f"{where}: a ```cpp block without <!-- example: FILE --> above it")
                continue
            kind, target = marker
            if lang is None:
                failures.append(f"{where}: a marker with no code block or table right after it")
                continue
            checked += 1
            if kind == "example":
                path = os.path.normpath(os.path.join(root, target))
                if path not in compiled:
                    failures.append(f"{where}: {target} is not one of the examples the tests compile and run")
                    continue
                with open(path, encoding="utf-8") as f:
                    text = f.read().split("\n")
                found, matched, at = find_run(body, text, allow_indent=True)
                if not found:
                    failures.append(f"{where}: the block is not in {target}: its line {matched + 1} "
                                    f"({body[matched].strip()!r}) differs from {target}:{at + 1}")
            else:
                if target not in programs:
                    print(f"not checked: {where}: the output of {target} (not built here)")
                    checked -= 1
                    continue
                found, matched, at = find_run(body, output_of(target), allow_indent=False)
                if not found:
                    failures.append(f"{where}: {target} ({programs[target]}) no longer prints this: its line "
                                    f"{matched + 1} ({body[matched]!r}) differs from the output's line {at + 1} "
                                    f"({(output_of(target) + [''])[at]!r})")

        if strict(page):
            with open(page, encoding="utf-8") as f:
                text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
            for link in LINK.findall(text):
                if re.match(r"^[a-z]+:", link):
                    continue
                file, _, anchor = link.partition("#")
                target = os.path.normpath(os.path.join(os.path.dirname(page), file)) if file else page
                if not os.path.exists(target):
                    failures.append(f"{name}: the link {link} leads nowhere")
                elif anchor and target.endswith(".md") and anchor not in anchors(target):
                    failures.append(f"{name}: the link {link} names no heading of {os.path.relpath(target, root)}")

    for f in failures:
        print("FAILED:", f)
    if failures:
        print("A page and its program differ. Where the program is right (a plan that changed on purpose, "
              "say), copy what it prints now into the page; where the page is right, fix the program.")
    print(f"{checked} marked blocks checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
