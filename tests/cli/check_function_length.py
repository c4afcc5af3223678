#!/usr/bin/env python3
"""The CLI stays thin (STYLE.md item 18): no function in the given .cpp files is longer than
MAX lines, counted from the first line of its signature to its closing brace. A brace scan:
comments, literals and preprocessor lines are blanked, then every brace block at namespace or class level whose
header has a parameter list is a function (lambdas count in the function around them).

Usage: check_function_length.py MAX [--allow LIST] FILE... (exit 1 naming each longer function).

LIST names the functions allowed past MAX, one a line: `PATH FUNCTION LINES  # why`, PATH as
the end of the file's path, LINES the most that function may have (so that none grows); `#`
starts a comment. An entry no longer past MAX is reported, to be removed."""
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


def read_allowed(path):
    """{(path suffix, function): most lines} from an allow-list file."""
    allowed = {}
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 3 or not words[2].isdigit():
            sys.exit(f"{path}:{number}: expected `PATH FUNCTION LINES`, got {line.strip()!r}")
        allowed[(words[0], words[1])] = int(words[2])
    return allowed


def allowance(allowed, path, name):
    """(key, most lines) of the entry for `name` in `path`, or (None, None)."""
    for (suffix, function), most in allowed.items():
        if function == name and ("/" + path.replace("\\", "/")).endswith("/" + suffix):
            return (suffix, function), most
    return None, None


def main():
    args = sys.argv[1:]
    limit = int(args.pop(0))
    allowed = {}
    if args and args[0] == "--allow":
        allowed = read_allowed(args[1])
        args = args[2:]
    longest = []
    for path in args:
        longest += [(lines, path, first, name) for name, first, lines in functions(path)]
    longest.sort(reverse=True)
    for lines, path, first, name in longest[:5]:
        print(f"{lines:4d} lines  {path}:{first}  {name}")
    failed = False
    used = set()
    for lines, path, first, name in longest:
        if lines <= limit:
            continue
        key, most = allowance(allowed, path, name)
        if key is not None:
            used.add(key)
            if lines <= most:
                continue
            print(f"FAIL: {path}:{first}: {name} has {lines} lines, more than the {most} its "
                  "allow-list entry grants: split it into named steps (STYLE.md item 23)")
        else:
            print(f"FAIL: {path}:{first}: {name} has {lines} lines (at most {limit}): "
                  + ("split it into named steps (STYLE.md item 23)" if allowed else
                     "move the work into a library function (STYLE.md item 18)"))
        failed = True
    for suffix, function in sorted(set(allowed) - used):
        print(f"note: {suffix} {function} is within {limit} lines now (or gone): remove its "
              "allow-list entry")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
