#!/usr/bin/env python3
"""Writes the pinned list of Megatron-LM's flags (core/config/data/megatron-arguments.txt).

Megatron-LM's flags come from two places, both read here with `ast` (nothing is imported):
  - the add_argument calls of megatron/training/arguments.py;
  - the dataclasses that megatron/training/argument_utils.py ArgumentGroupFactory turns into
    flags (TransformerConfig and its ModelParallelConfig base, the megatron/training/config
    dataclasses): a field `x_y` becomes `--x-y`; a bool field whose default is not False
    becomes `--no-x-y` and `--disable-x-y` (store_false); `argparse_meta` in the field's
    metadata overrides `arg_names` and `dest`; the factory's `exclude` list and fields with
    init=False give no flag.

Usage:
  megatron_arguments.py MEGATRON_CHECKOUT > core/config/data/megatron-arguments.txt
  megatron_arguments.py --git-dir PATH/.git [--commit REV] > core/config/data/megatron-arguments.txt

The output: a header naming the commit, then one line per flag, "FLAG DEST", sorted by flag.
stepsim's test megatron_arguments_test fails naming each listed flag that stepsim's tables do
not classify.
"""

import argparse
import ast
import os
import subprocess
import sys

ARGUMENTS_PY = "megatron/training/arguments.py"


class Tree:
    """Python files of a Megatron-LM checkout: a directory, or a commit of a git directory."""

    def __init__(self, directory=None, git_dir=None, commit="HEAD"):
        self.directory = directory
        self.git_dir = git_dir
        self.commit = commit
        self._cache = {}

    def _git(self, *args):
        return subprocess.run(["git", "--git-dir", self.git_dir, *args], check=True,
                              capture_output=True, text=True).stdout

    def describe(self):
        """The commit's hash and date, or "" for a directory that is not a git work tree."""
        try:
            if self.git_dir:
                return self._git("log", "-1", "--format=%H %cs", self.commit).strip()
            out = subprocess.run(["git", "-C", self.directory, "log", "-1", "--format=%H %cs"],
                                 check=True, capture_output=True, text=True).stdout
            return out.strip()
        except (subprocess.CalledProcessError, FileNotFoundError):
            return ""

    def python_files(self):
        if self.git_dir:
            names = self._git("ls-tree", "-r", "--name-only", self.commit, "megatron").split("\n")
            return [n for n in names if n.endswith(".py")]
        out = []
        for root, _, files in os.walk(os.path.join(self.directory, "megatron")):
            for f in files:
                if f.endswith(".py"):
                    out.append(os.path.relpath(os.path.join(root, f), self.directory))
        return sorted(out)

    def read(self, path):
        if path not in self._cache:
            if self.git_dir:
                self._cache[path] = self._git("show", f"{self.commit}:{path}")
            else:
                with open(os.path.join(self.directory, path), encoding="utf-8") as f:
                    self._cache[path] = f.read()
        return self._cache[path]


def constant_strings(node):
    """The strings of a list/tuple literal of constants, or None."""
    if isinstance(node, (ast.List, ast.Tuple)):
        values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        if len(values) == len(node.elts) and all(isinstance(v, str) for v in values):
            return values
    return None


def flag_to_dest(flags):
    """argparse's dest: the first long option without its dashes, '-' as '_'."""
    long_flags = [f for f in flags if f.startswith("--")]
    first = long_flags[0] if long_flags else flags[0]
    return first.lstrip("-").replace("-", "_")


def add_argument_flags(call):
    """(flags, dest) of a `x.add_argument("--a", "--b", dest=...)` call, or None."""
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    flags = [f for f in flags if f.startswith("-")]
    if not flags:
        return None
    dest = None
    for kw in call.keywords:
        if kw.arg == "dest" and isinstance(kw.value, ast.Constant):
            dest = kw.value.value
    return flags, dest or flag_to_dest(flags)


class ClassIndex:
    """Every class defined in the checkout's megatron/ package, by name (megatron/core and
    megatron/training win over other packages' classes of the same name)."""

    def __init__(self, tree):
        self.classes = {}
        paths = tree.python_files()
        if tree.git_dir:
            # One `git cat-file --batch` for every file: thousands of `git show` would be slow.
            proc = subprocess.run(["git", "--git-dir", tree.git_dir, "cat-file", "--batch"],
                                  input="".join(f"{tree.commit}:{p}\n" for p in paths).encode(),
                                  check=True, capture_output=True)
            data, pos = proc.stdout, 0
            for path in paths:
                header_end = data.index(b"\n", pos)
                size = int(data[pos:header_end].split()[2])
                tree._cache[path] = data[header_end + 1:header_end + 1 + size].decode("utf-8",
                                                                                      "replace")
                pos = header_end + 1 + size + 1
        for path in paths:
            self._add(path, tree.read(path))

    def _add(self, path, text):
        if "class " not in text:
            return
        try:
            module = ast.parse(text)
        except SyntaxError:
            return
        preferred = path.startswith(("megatron/core/", "megatron/training/"))
        for node in module.body:
            if isinstance(node, ast.ClassDef) and (preferred or node.name not in self.classes):
                self.classes[node.name] = (path, node)

    def fields(self, name):
        """The dataclass fields of class `name`, bases first (dataclasses.fields order)."""
        if name not in self.classes:
            raise SystemExit(f"megatron_arguments.py: class {name} not found under megatron/")
        _, node = self.classes[name]
        ordered = {}
        for base in node.bases:
            base_name = base.id if isinstance(base, ast.Name) else (
                base.attr if isinstance(base, ast.Attribute) else None)
            if base_name and base_name in self.classes:
                for f in self.fields(base_name):
                    ordered[f["name"]] = f
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            if "ClassVar" in ast.unparse(stmt.annotation):
                continue
            ordered[stmt.target.id] = field_info(stmt)
        return list(ordered.values())


def field_info(stmt):
    """A dataclass field: its name, whether its type is bool, its default, init and metadata."""
    info = {"name": stmt.target.id, "is_bool": is_bool_type(stmt.annotation),
            "default": None, "init": True, "arg_names": None, "dest": None}
    value = stmt.value
    if isinstance(value, ast.Call) and ast.unparse(value.func).endswith("field"):
        for kw in value.keywords:
            if kw.arg == "default":
                info["default"] = ast.unparse(kw.value)
            elif kw.arg == "init" and isinstance(kw.value, ast.Constant):
                info["init"] = bool(kw.value.value)
            elif kw.arg == "metadata" and isinstance(kw.value, ast.Dict):
                read_argparse_meta(kw.value, info)
    elif value is not None:
        info["default"] = ast.unparse(value)
    return info


def read_argparse_meta(metadata, info):
    for key, val in zip(metadata.keys, metadata.values):
        if not (isinstance(key, ast.Constant) and key.value == "argparse_meta"
                and isinstance(val, ast.Dict)):
            continue
        for k, v in zip(val.keys, val.values):
            name = k.value if isinstance(k, ast.Constant) else None
            if name == "arg_names":
                info["arg_names"] = constant_strings(v)
            elif name == "dest" and isinstance(v, ast.Constant):
                info["dest"] = v.value
            elif name == "type":
                info["is_bool"] = ast.unparse(v) == "bool"


def is_bool_type(annotation):
    """ArgumentGroupFactory._extract_type gives type=bool: bool, Optional[bool], bool | None."""
    text = ast.unparse(annotation).replace(" ", "")
    return text in ("bool", "Optional[bool]", "bool|None", "typing.Optional[bool]", "'bool'")


def factory_flags(field):
    """(flags, dest) of one field, as ArgumentGroupFactory._build_argparse_kwargs_from_field."""
    name = field["name"]
    flags = ["--" + name.replace("_", "-")]
    if field["is_bool"] and field["default"] != "False":
        # store_false: "store_true" if attribute.default == False else "store_false"
        flags = ["--no-" + name.replace("_", "-"), "--disable-" + name.replace("_", "-")]
    if field["arg_names"]:
        flags = field["arg_names"]
    return flags, field["dest"] or name


def local_lists(function):
    """The list literals a function binds to names (`exclude = [...]`)."""
    out = {}
    for node in ast.walk(function):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            values = constant_strings(node.value)
            if values is not None:
                out[node.targets[0].id] = values
    return out


def factory_call(call, names):
    """(class name, excluded fields) of an `ArgumentGroupFactory(Cls, exclude=...)` call."""
    if not (isinstance(call.func, ast.Name) and call.func.id == "ArgumentGroupFactory"):
        return None
    if not call.args or not isinstance(call.args[0], ast.Name):
        return None
    exclude = []
    for kw in call.keywords:
        if kw.arg == "exclude":
            exclude = (names.get(kw.value.id, []) if isinstance(kw.value, ast.Name)
                       else constant_strings(kw.value))
    return call.args[0].id, set(exclude or [])


def megatron_flags(tree, index):
    """{flag: dest} of every flag arguments.py adds, directly or through ArgumentGroupFactory."""
    module = ast.parse(tree.read(ARGUMENTS_PY))
    flags = {}
    for function in [n for n in module.body if isinstance(n, ast.FunctionDef)]:
        names = local_lists(function)
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
                got = add_argument_flags(node)
                if got:
                    for f in got[0]:
                        flags[f] = got[1]
                continue
            factory = factory_call(node, names)
            if factory is None:
                continue
            class_name, exclude = factory
            for field in index.fields(class_name):
                if field["name"] in exclude or not field["init"]:
                    continue
                field_flags, dest = factory_flags(field)
                for f in field_flags:
                    flags[f] = dest
    return flags


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkout", nargs="?", help="a Megatron-LM checkout (a directory)")
    parser.add_argument("--git-dir", help="a Megatron-LM git directory (bare or .git)")
    parser.add_argument("--commit", default="HEAD", help="the commit to read with --git-dir")
    args = parser.parse_args()
    if bool(args.checkout) == bool(args.git_dir):
        parser.error("give a checkout directory or --git-dir")
    if args.git_dir:
        tree = Tree(git_dir=args.git_dir, commit=args.commit)
    else:
        tree = Tree(directory=args.checkout)
    index = ClassIndex(tree)
    flags = megatron_flags(tree, index)
    described = tree.describe() or "(not a git checkout)"
    out = sys.stdout
    out.write("# Megatron-LM's command-line flags: FLAG DEST, one a line, sorted by flag.\n")
    out.write(f"# NVIDIA/Megatron-LM {described}: {ARGUMENTS_PY} and the dataclasses\n")
    out.write("# its ArgumentGroupFactory turns into flags"
              " (megatron/training/argument_utils.py).\n")
    out.write("# Regenerate: python3 core/config/tools/megatron_arguments.py MEGATRON_CHECKOUT"
              " > core/config/data/megatron-arguments.txt\n")
    for flag in sorted(flags):
        out.write(f"{flag} {flags[flag]}\n")


if __name__ == "__main__":
    main()
