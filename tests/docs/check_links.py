#!/usr/bin/env python3
"""Every relative link of the repository's Markdown files resolves to a file (and, with a
#fragment, to a heading of it), and no file points outside the repository (into the shared
folder beside it)."""

import re
import subprocess
import sys
from pathlib import Path

OUTSIDE = ".." + "/shared"  # spelt in two parts so that this file does not match itself
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(md: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    out = set()
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            title = re.sub(r"[^\w\- ]", "", title)
            out.add(title.replace(" ", "-"))
    return out


def main(root: Path) -> int:
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "--cached", "--others",
                             "--exclude-standard"], check=False, capture_output=True, text=True)
    if listed.returncode == 0:
        files = listed.stdout.split()
    else:  # not a git checkout: every file outside build folders
        files = [str(p.relative_to(root)) for p in root.rglob("*")
                 if p.is_file() and not any(part.startswith(("build", ".")) for part in
                                            p.relative_to(root).parts)]
    problems = []
    for name in files:
        path = root / name
        if not path.is_file() or "tests/docs/" in name:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if OUTSIDE in line:
                problems.append(f"{name}:{n}: points outside the repository: {line.strip()}")
        if not name.endswith(".md"):
            continue
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            file_part, _, fragment = target.partition("#")
            dest = (path.parent / file_part).resolve()
            if not dest.exists():
                problems.append(f"{name}: link to {target}: no such file")
            elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                problems.append(f"{name}: link to {target}: no such heading")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()))
