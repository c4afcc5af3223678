#!/usr/bin/env python3
"""The README's tour shows the build's own output: this compares it, or rewrites it.

  check_tour.py REPO STEPSIM           fail (exit 1) when the README's block differs
  check_tour.py REPO STEPSIM --write   rewrite the block from the program's output

The block is the fenced one that starts with `$ build/bin/stepsim predict`: the lines after
it up to a line `...` must be the first lines of what that command prints, run in REPO.
"""
import subprocess
import sys

COMMAND = '$ build/bin/stepsim predict'
SHOWN = 17  # lines of output the README shows before its "..."


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != '--write'):
        print(__doc__.strip())
        return 2
    repo, stepsim = sys.argv[1], sys.argv[2]
    path = f'{repo}/README.md'
    lines = open(path, encoding='utf-8').read().split('\n')
    start = lines.index(COMMAND) + 1
    end = lines.index('...', start)
    run = subprocess.run([stepsim, 'predict'], cwd=repo, capture_output=True, text=True)
    if run.returncode != 0:
        print(f'{stepsim} predict exited {run.returncode}:\n{run.stderr}')
        return 1
    output = run.stdout.split('\n')
    if len(sys.argv) == 4:
        lines[start:end] = output[:SHOWN]
        with open(path, 'w', encoding='utf-8') as f:
            f.write('\n'.join(lines))
        print(f'{path}: tour rewritten ({SHOWN} lines)')
        return 0
    shown = lines[start:end]
    if shown != output[:len(shown)] or not shown:
        print(f'{path}: the tour differs from `stepsim predict` (rewrite it: '
              f'tests/readme/check_tour.py . build/bin/stepsim --write)')
        for i, (a, b) in enumerate(zip(shown, output)):
            if a != b:
                print(f'  line {i + 1}:\n    README  {a}\n    program {b}')
                break
        return 1
    print(f'{path}: the tour is the program\'s output ({len(shown)} lines)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
