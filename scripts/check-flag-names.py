#!/usr/bin/env python3
"""Fails where library code spells a command-line flag: flag names belong to
cli/, and the libraries word their errors in their own terms (the CLI passes
a flag's name in where an error must name it). Run by scripts/test.sh."""
import pathlib
import re
import sys

LIBRARIES = ["model", "planner", "executor", "profiler", "workflow"]
FLAG = re.compile(r'"--[a-z]')  # a string literal that starts as a flag does

root = pathlib.Path(__file__).resolve().parent.parent
found = []
for folder in LIBRARIES:
    for path in sorted((root / folder).rglob("*")):
        if path.suffix not in {".h", ".cpp", ".cu", ".cuh"}:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            code = line.split("//", 1)[0]
            if FLAG.search(code):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
if found:
    print("check-flag-names: flag names outside cli/ (the CLI passes them in):", *found, sep="\n  ")
    sys.exit(1)
print(f"check-flag-names: no flag name in {', '.join(LIBRARIES)}")
