#!/usr/bin/env python3
"""The CLI stays thin (STYLE.md item 18): no function in the given .cpp files is longer than
MAX lines, counted from the first line of its signature to its closing brace. A brace scan:
comments, literals and preprocessor lines are blanked, then every brace block at namespace or class level whose
header has a parameter list is a function (lambdas count in the function around them).

Usage: check_function_length.py MAX FILE... (exit 1 naming each longer function)."""
import re
import sys


def blank(text):
    """Comments, string and character literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, line count) of every function defined in `path`."""
    text = blank(open(path, encoding="utf-8").read())
    text = re.sub(r"(?m)^[ \t]*#.*$", lambda m: " " * len(m.group(0)), text)
    stack = []  # (kind, first line, name)
    header_start = 0
    found = []
    for i, c in enumerate(text):
        if c in ";{}":
            if c == "{":
                header = text[header_start:i]
                inside = any(kind == "function" for kind, _, _ in stack)
                if inside:
                    stack.append(("inner", 0, ""))
                elif (re.match(r"\s*(namespace|struct|class|enum|union|extern)\b", header)
                      or header.rstrip().endswith("=") or ")" not in header):
                    stack.append(("other", 0, ""))
                else:
                    lead = len(header) - len(header.lstrip())
                    first = text.count("\n", 0, header_start + lead) + 1
                    name = re.search(r"([\w:~]+)\s*\(", header)
                    stack.append(("function", first, name.group(1) if name else "?"))
            elif c == "}" and stack:
                kind, first, name = stack.pop()
                if kind == "function":
                    found.append((name, first, text.count("\n", 0, i) + 2 - first))
            header_start = i + 1
    return found


def main():
    limit = int(sys.argv[1])
    longest = []
    for path in sys.argv[2:]:
        longest += [(lines, path, first, name) for name, first, lines in functions(path)]
    longest.sort(reverse=True)
    for lines, path, first, name in longest[:5]:
        print(f"{lines:4d} lines  {path}:{first}  {name}")
    over = [f for f in longest if f[0] > limit]
    for lines, path, first, name in over:
        print(f"FAIL: {path}:{first}: {name} has {lines} lines (at most {limit}): move the work "
              "into a library function (STYLE.md item 18)")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
