#!/usr/bin/env python3
"""Fails where papaya's own files include each other in a circle.

A unit is a header and its source (foo.h + foo.cpp, or foo.cu): one node of
the graph, so foo.cpp including bar.h while bar.cpp includes foo.h is a
circle as much as two headers including each other. Includes are the quoted
ones, resolved from the repository root (as every papaya include is written)
or beside the including file. A folder's internal/ is its own: included
from inside that folder only. Prints each circle and each reach into
another folder's internal/, and exits 1; with --graph, prints every unit's
edges instead.
"""
import os
import re
import sys

FOLDERS = ["model", "planner", "executor", "profiler", "workflow", "cli", "tests", "bench"]
SUFFIXES = (".h", ".cpp", ".cu")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def unit_of(path):
    return os.path.splitext(path)[0]


def collect(root):
    files = []
    for folder in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for name in names:
                if name.endswith(SUFFIXES):
                    files.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(files)


def edges(root, files):
    known = set(files)
    graph = {}
    for path in files:
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        src = unit_of(path)
        graph.setdefault(src, set())
        for inc in INCLUDE.findall(text):
            beside = os.path.normpath(os.path.join(os.path.dirname(path), inc))
            target = inc if inc in known else beside if beside in known else None
            if target is None:
                continue  # not papaya's (a system or generated header)
            dst = unit_of(target)
            if dst != src:
                graph[src].add(dst)
    return graph


def private_reaches(graph):
    """Edges into an internal/ folder from outside the folder that holds it."""
    found = []
    for src in sorted(graph):
        for dst in sorted(graph[src]):
            parts = dst.split("/")
            if "internal" not in parts:
                continue
            owner = "/".join(parts[: parts.index("internal")]) + "/"
            if not src.startswith(owner):
                found.append((src, dst))
    return found


def circles(graph):
    """Tarjan's strongly connected components of more than one unit."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    graph = edges(root, collect(root))
    if "--graph" in sys.argv[1:]:
        for unit in sorted(graph):
            print(unit + ": " + " ".join(sorted(graph[unit])))
        return 0
    found = circles(graph)
    for component in found:
        inside = set(component)
        print("include circle: " + ", ".join(component))
        for unit in component:
            for dst in sorted(graph[unit] & inside):
                print(f"  {unit} -> {dst}")
    reaches = private_reaches(graph)
    for src, dst in reaches:
        print(f"include of another folder's internal/: {src} -> {dst}")
    if found or reaches:
        print(f"check-includes: {len(found)} circle(s), {len(reaches)} reach(es) into internal/ among {len(graph)} units")
        return 1
    print(f"check-includes: no circle among {len(graph)} units, none reaching into another folder's internal/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
