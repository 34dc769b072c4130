#!/usr/bin/python3
"""Runs docs/guide.md, so that every code block in it is exercised (a CTest test).

Usage: check_guide.py GUIDE.md BUILD_DIR WORK_DIR

Every fenced block must be either a file (info string "LANG file=NAME": written to NAME in
an empty folder) or a shell block ("sh": run there with bash -e, in order, after the files
are written), else the check fails. The build is installed into WORK_DIR/prefix first; the
shell blocks see it as $AMBER_PREFIX, with its bin/ first on PATH.
"""
import os
import re
import shutil
import subprocess
import sys


def parse(path):
    files, commands = {}, []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)(.*)$", lines[i])
        if not m:
            i += 1
            continue
        start, lang, rest = i + 1, m.group(1), m.group(2).strip()
        end = i + 1
        while end < len(lines) and lines[end] != "```":
            end += 1
        if end == len(lines):
            raise SystemExit(f"{path}:{start}: code block never closed")
        body = "\n".join(lines[i + 1:end]) + "\n"
        fm = re.fullmatch(r"file=(\S+)", rest)
        if fm:
            if fm.group(1) in files:
                raise SystemExit(f"{path}:{start}: file {fm.group(1)} defined twice")
            files[fm.group(1)] = body
        elif lang == "sh" and not rest:
            commands.append((start, body))
        else:
            raise SystemExit(f"{path}:{start}: block '```{lang} {rest}' is neither a file (file=NAME) nor a sh "
                             "block, so no test would exercise it")
        i = end + 1
    return files, commands


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    guide, build, work = argv[1:]
    files, commands = parse(guide)
    if os.path.exists(work):
        shutil.rmtree(work)
    prefix, project = os.path.join(work, "prefix"), os.path.join(work, "project")
    os.makedirs(project)
    subprocess.run(["cmake", "--install", build, "--prefix", prefix], check=True, stdout=subprocess.DEVNULL)
    for name, body in files.items():
        with open(os.path.join(project, name), "w", encoding="utf-8") as f:
            f.write(body)
    env = dict(os.environ, AMBER_PREFIX=prefix, PATH=os.path.join(prefix, "bin") + os.pathsep + os.environ["PATH"])
    print(f"guide: {len(files)} files ({', '.join(files)}), {len(commands)} shell blocks; Amber installed in {prefix}")
    for line, body in commands:
        print(f"--- {guide}:{line}\n{body.rstrip()}", flush=True)
        r = subprocess.run(["bash", "-e", "-x", "-c", body], cwd=project, env=env)
        if r.returncode != 0:
            print(f"FAIL: the shell block at {guide}:{line} exited with {r.returncode}", file=sys.stderr)
            return 1
    print(f"guide: every block of {guide} ran")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
