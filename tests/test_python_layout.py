"""The ctypes structs of python/ferry/_lib.py match the C structs of
include/ferry.h: every public C struct has a Python counterpart with the same
size and alignment, the same field names in the same order, and the same
offset and size for each field; every Python struct has a C struct.

The C side comes from $FERRY_BUILD/tests/layout/struct_layout (built from
tests/layout/struct_layout.c by `make`), which prints sizeof, alignof and
offsetof as JSON. Its table is written by hand, so this test also reads the
struct and field names from include/ferry.h itself: a struct or field added to
the header without a line in struct_layout.c fails here too.

A Python class CamelName restates struct ferry_camel_name (a class may name
its struct with a _c_struct_ attribute instead).

Run: /usr/bin/python3 tests/test_python_layout.py (FERRY_BUILD names the build
directory, default build). Exit 0 pass, 1 fail.
"""
import ctypes
import json
import os
import re
import subprocess
import sys

from pyharness import ROOT, check, run_tests  # noqa: E402
from ferry import _lib  # noqa: E402

HEADER = os.path.join(ROOT, "include", "ferry.h")
LAYOUT_C = "tests/layout/struct_layout.c"
LAYOUT = os.path.join(ROOT, os.environ.get("FERRY_BUILD", "build"), "tests", "layout",
                      "struct_layout")


def header_structs(path):
    """Returns {struct name: [field names in order]} for every
    `struct ferry_NAME { ... };` definition in the header."""
    with open(path) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    structs = {}
    for m in re.finditer(r"\bstruct\s+(ferry_\w+)\s*\{(.*?)\}\s*;", text, flags=re.S):
        name, body = m.group(1), m.group(2)
        if "{" in body or "(" in body:
            raise ValueError("%s: struct %s has a nested struct, union or function pointer; "
                             "teach header_structs to read it" % (path, name))
        fields = []
        for decl in body.split(";"):
            for declarator in decl.split(","):
                declarator = re.sub(r"\[[^]]*\]", "", declarator).strip()
                ident = re.search(r"(\w+)$", declarator)
                if ident:
                    fields.append(ident.group(1))
        structs[name] = fields
    return structs


def c_layouts():
    """Returns {struct name: layout dict} as struct_layout prints it."""
    if not os.path.exists(LAYOUT):
        raise FileNotFoundError("%s is missing: build it with `make` (rule in the Makefile)"
                                % LAYOUT)
    out = subprocess.run([LAYOUT], check=True, stdout=subprocess.PIPE).stdout
    return {s["name"]: s for s in json.loads(out)["structs"]}


def c_name(cls):
    """The C struct a ctypes class restates: CtxOptions -> ferry_ctx_options."""
    return getattr(cls, "_c_struct_", None) or \
        "ferry_" + re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


def python_structs():
    """Returns {C struct name: ctypes class} for every Structure (or Union)
    that _lib.py defines."""
    found = {}
    for obj in vars(_lib).values():
        if isinstance(obj, type) and issubclass(obj, (ctypes.Structure, ctypes.Union)) \
                and obj.__module__ == _lib.__name__:
            found[c_name(obj)] = obj
    return found


def compare_header(declared, layouts):
    """Every header struct has a layout entry listing exactly its fields."""
    for name, fields in declared.items():
        if name not in layouts:
            check(False, "struct %s is defined in include/ferry.h but %s has no "
                  "STRUCT(%s, ...) line" % (name, LAYOUT_C, name))
            continue
        listed = [f["name"] for f in layouts[name]["fields"]]
        for i in range(max(len(fields), len(listed))):
            h = fields[i] if i < len(fields) else None
            c = listed[i] if i < len(listed) else None
            check(h == c, "struct %s field #%d: include/ferry.h declares %s but %s lists %s "
                  "(keep its F(...) list in declaration order)"
                  % (name, i, h or "nothing", LAYOUT_C, c or "nothing"))
            if h != c:
                break
    for name in layouts:
        check(name in declared, "%s lists struct %s, which include/ferry.h does not define"
              % (LAYOUT_C, name))


def compare_fields(name, layout, cls):
    """The ctypes class has the C struct's fields, in order, at its offsets and sizes."""
    c_fields = layout["fields"]
    py_fields = [f[0] for f in cls._fields_]
    where = "python/ferry/_lib.py %s" % cls.__name__
    for i in range(max(len(c_fields), len(py_fields))):
        c = c_fields[i] if i < len(c_fields) else None
        p = py_fields[i] if i < len(py_fields) else None
        if c is None or p != c["name"]:
            check(False, "struct %s field #%d: C has %s, %s has %s"
                  % (name, i, c["name"] if c else "no more fields", where, p or "no more fields"))
            return
        desc = getattr(cls, p)
        check(desc.offset == c["offset"], "struct %s field %s: offset %d in C, %d in %s"
              % (name, p, c["offset"], desc.offset, where))
        check(desc.size == c["size"], "struct %s field %s: size %d in C, %d in %s"
              % (name, p, c["size"], desc.size, where))


def test_layout(tmp):
    declared = header_structs(HEADER)
    check(declared, "found no `struct ferry_NAME {` definition in include/ferry.h")
    layouts = c_layouts()
    compare_header(declared, layouts)
    pys = python_structs()
    for name in sorted(set(declared) | set(layouts)):
        cls = pys.get(name)
        if cls is None:
            check(False, "struct %s has no ctypes counterpart in python/ferry/_lib.py "
                  "(expected a class named like %s)"
                  % (name, "".join(w.title() for w in name.split("_")[1:])))
            continue
        layout = layouts.get(name)
        if layout is None:
            continue  # reported by compare_header
        check(ctypes.sizeof(cls) == layout["size"], "struct %s: sizeof is %d in C, %d for %s"
              % (name, layout["size"], ctypes.sizeof(cls), cls.__name__))
        check(ctypes.alignment(cls) == layout["align"], "struct %s: alignment %d in C, %d for %s"
              % (name, layout["align"], ctypes.alignment(cls), cls.__name__))
        compare_fields(name, layout, cls)
    for name, cls in pys.items():
        check(name in declared, "python/ferry/_lib.py %s restates struct %s, which "
              "include/ferry.h does not define" % (cls.__name__, name))
    print("compared %d structs: %s" % (len(layouts), ", ".join(sorted(layouts))))


if __name__ == "__main__":
    sys.exit(run_tests([test_layout], "ferry-layout-"))
