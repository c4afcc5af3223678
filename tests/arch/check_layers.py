#!/usr/bin/env python3
"""Reads every #include of stepsim's libraries and fails on an arrow against the layers.

The layers and their arrows are docs/architecture.md's ("Layers"): a folder may include its
own headers and the public headers (stepsim/<layer>/...) of the layers below it, nothing
else. A quoted relative include must stay inside the including folder. A library folder of
more than MAX_FILES source files side by side is asking for a subfolder.

  check_layers.py [--root DIR]   check the tree at DIR (default: the repository)
  check_layers.py --self-test    check tests/arch/fixture, which plants wrong includes,
                                 and fail unless exactly those are reported
"""
import argparse
import os
import re
import sys

# folder -> (layer name, the layers it may include directly); includes are allowed along
# the transitive closure of these arrows.
FOLDERS = {
    'core/base': ('base', []),
    'core/config': ('config', ['base']),
    'core/layout': ('layout', ['config']),
    'core/check': ('check', ['layout']),
    'core/ops': ('ops', ['layout']),
    'core/import': ('import', ['check']),
    'core/memory': ('memory', ['ops']),
    'core/plan': ('plan', ['memory']),
    'core/cost': ('cost', ['ops']),
    'sim/engine': ('engine', ['ops']),
    'sim/schedule': ('schedule', ['engine']),
    'sim/graph': ('graph', ['schedule', 'plan', 'cost']),
    'sim/simulate': ('simulate', ['graph']),
    'sim/report': ('report', ['simulate', 'check']),
    'sim/sweep': ('sweep', ['report', 'import']),
    'calibration': ('calibration', ['cost']),
    'validator': ('validator', ['calibration', 'report']),
    'cli': ('cli', ['validator', 'sweep']),
    'python': ('python', ['sweep']),
    'gui': ('gui', ['sweep']),
}
# Folders whose sources must not crowd one directory.
LIBRARY_ROOTS = ('core/', 'sim/', 'calibration', 'validator')
MAX_FILES = 16
SOURCE = re.compile(r'\.(cpp|hpp|h|cu)$')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def closure():
    direct = {layer: deps for layer, deps in FOLDERS.values()}
    out = {}
    for layer in direct:
        seen, todo = set(), list(direct[layer])
        while todo:
            d = todo.pop()
            if d not in seen:
                seen.add(d)
                todo.extend(direct[d])
        out[layer] = seen | {layer}
    return out


def folder_of(rel):
    for folder in sorted(FOLDERS, key=len, reverse=True):
        if rel == folder or rel.startswith(folder + '/'):
            return folder
    return None


def check(root):
    allowed = closure()
    layers = {layer for layer, _ in FOLDERS.values()}
    problems = []
    for folder in FOLDERS:
        base = os.path.join(root, folder)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in ('bench', 'tools'))
            sources = sorted(f for f in filenames if SOURCE.search(f))
            rel_dir = os.path.relpath(dirpath, root)
            if folder.startswith(LIBRARY_ROOTS) and len(sources) > MAX_FILES:
                problems.append(f'{rel_dir}: {len(sources)} source files side by side '
                                f'(at most {MAX_FILES}: make a subfolder)')
            for name in sources:
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                owner = folder_of(rel)
                layer = FOLDERS[owner][0]
                with open(path, encoding='utf-8') as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc = m.group(1)
                        parts = inc.split('/')
                        if parts[0] == 'stepsim' and len(parts) > 2:
                            target = parts[1]
                            if target in layers and target not in allowed[layer]:
                                problems.append(f'{rel}:{n}: {layer} -> {target} ("{inc}"): '
                                                f'{layer} may include {sorted(allowed[layer])}')
                            continue
                        resolved = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
                        if inc.startswith('..') and folder_of(resolved) not in (owner, None):
                            problems.append(f'{rel}:{n}: "{inc}" reaches into '
                                            f'{folder_of(resolved)}: include its public header')
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument('--root', default=os.path.normpath(os.path.join(here, '..', '..')))
    parser.add_argument('--self-test', action='store_true')
    args = parser.parse_args()
    if args.self_test:
        problems = check(os.path.join(here, 'fixture'))
        expected = ['core/base/src/wrong_arrow.cpp:4: base -> ops',
                    'core/ops/src/reach_in.cpp:3: "../../cost/src/private.hpp" reaches into core/cost']
        found = [e for e in expected if any(p.startswith(e) for p in problems)]
        if found != expected or len(problems) != len(expected):
            print('self-test: expected exactly\n  ' + '\n  '.join(expected) +
                  '\nreported\n  ' + '\n  '.join(problems))
            return 1
        print(f'self-test: the {len(expected)} planted wrong includes are reported')
        return 0
    problems = check(args.root)
    for p in problems:
        print(p)
    if problems:
        print(f'{len(problems)} include(s) against the layers of docs/architecture.md')
        return 1
    print('every include points down the layers')
    return 0


if __name__ == '__main__':
    sys.exit(main())
