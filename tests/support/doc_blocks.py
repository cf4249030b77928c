"""The fenced code blocks of the documentation, and what the tests do with each kind.

Every block of a page is run or checked, by its fence (``FENCES``): ``python`` runs, ``text`` is
the output of the ``python`` block right before it, ``pyi`` is an API signature compared with the
real one (``signature_problems``), a ``python`` block titled ``mypy --strict`` is checked with mypy
(its ``# error:`` and ``# note:`` comments are what mypy reports for the line above them). Blocks
that are not Python are recognised by their fence: ``timeline`` (a drawing of lifetimes along a
time axis) and ``bash`` (shell commands). A block without a fence language, or with another one,
is refused: the tests would not know what to do with it.
"""
from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from typing import Any

import attrs

import streamql as sq

#: a fenced block, at the start of a line or indented (inside an admonition): indent, language,
#: the rest of the fence line (``title="..."``), code
BLOCK = re.compile(r"^([ \t]*)```(\w*)([^\n]*)\n(.*?)^\1```[ \t]*$", re.S | re.M)

#: what the tests do with each fence's blocks
FENCES = {
    "python": "runs in the page's namespace, in order; titled 'mypy --strict', checked with mypy",
    "text": "what the python block right before it prints, compared",
    "pyi": "API signatures, compared with streamql's",
    "timeline": "a drawing of lifetimes along an axis (its first line: 'time ...' or 'position ...')",
    "bash": "shell commands: installing and running",
}
MYPY_TITLE = 'title="mypy --strict"'


@dataclass(frozen=True)
class Block:
    language: str
    info: str       # the rest of the fence line
    code: str       # without the fence's indent
    line: int       # of the opening fence, from 1
    follows: bool   # only blank lines between it and the block before it

    @property
    def mypy(self) -> bool:
        return self.language == "python" and self.info.strip() == MYPY_TITLE

    @property
    def runs(self) -> bool:
        return self.language == "python" and not self.mypy


def blocks(text: str) -> list[Block]:
    found: list[Block] = []
    end = None
    for m in BLOCK.finditer(text):
        indent = len(m.group(1))
        code = "".join(line[indent:] for line in m.group(4).splitlines(keepends=True))
        follows = end is not None and not text[end:m.start()].strip()
        found.append(Block(m.group(2), m.group(3), code, text.count("\n", 0, m.start()) + 1, follows))
        end = m.end()
    return found


def fence_lines(text: str) -> int:
    """The lines that open or close a fence: twice the blocks, when every fence is closed."""
    return len(re.findall(r"^[ \t]*```", text, re.M))


# --- signatures ----------------------------------------------------------------------------------
#: ``Binder.bind(...) -> Binder``, ``Stream[T].group_apply(...) -> ...``: a callable's signature
CALL = re.compile(r"^(?P<name>[\w.]+(?:\[[\w, ]+\])?(?:\.\w+)?)\((?P<rest>.*)$", re.S)
#: ``Result.late: list[Late]``: an attribute's annotation
ATTRIBUTE = re.compile(r"^(?P<name>[\w.]+): (?P<annotation>.+)$", re.S)


def statements(code: str) -> list[str]:
    """The block's top-level statements: a line at column 0 and its continuation lines (open
    brackets, or an indented body), comments and decorators removed."""
    chunks: list[list[str]] = []
    depth = 0
    for line in code.splitlines():
        text = re.sub(r"\s+#.*$", "", line) if not line.lstrip().startswith("#") else ""
        if not text.strip() or (depth == 0 and text.startswith("@")):
            continue    # a blank line, a comment, a decorator
        if depth == 0 and not line[0].isspace():
            chunks.append([])
        if chunks:
            chunks[-1].append(text)
        depth += sum(text.count(c) for c in "([{") - sum(text.count(c) for c in ")]}")
    return ["\n".join(chunk) for chunk in chunks]


def resolve(name: str) -> Any:
    """``sq.reference.run``, ``Binder.bind``, ``Stream[T].group_apply``: the object in streamql."""
    obj: Any = sq
    for part in re.sub(r"\[[^\]]*\]", "", name).removeprefix("sq.").split("."):
        obj = getattr(obj, part)
    return obj


def normal(annotation: str) -> str:
    """An annotation's text as ast prints it: the same spacing and quotes for both sides."""
    return ast.unparse(ast.parse(annotation, mode="eval"))


def real_annotation(annotation: Any) -> str:
    return normal(annotation if isinstance(annotation, str) else inspect.formatannotation(annotation))


def compare_function(name: str, documented: ast.FunctionDef, real: Any) -> list[str]:
    """The differences between a documented ``def`` and the real callable's signature: names,
    kinds and defaults of the parameters, and the annotations the documentation gives."""
    problems: list[str] = []
    parameters = list(inspect.signature(real).parameters.values())
    args = documented.args
    doc: list[tuple[ast.arg, inspect._ParameterKind, ast.expr | None]] = []
    positional = args.posonlyargs + args.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    doc += [(a, inspect.Parameter.POSITIONAL_OR_KEYWORD, d) for a, d in zip(positional, defaults)]
    if args.vararg:
        doc.append((args.vararg, inspect.Parameter.VAR_POSITIONAL, None))
    doc += [(a, inspect.Parameter.KEYWORD_ONLY, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        doc.append((args.kwarg, inspect.Parameter.VAR_KEYWORD, None))
    if parameters and parameters[0].name in ("self", "cls") and (not doc or doc[0][0].arg != parameters[0].name):
        parameters = parameters[1:]   # Binder.bind(stream, ...): the method's self is not written
    documented_names = [(a.arg, kind) for a, kind, _ in doc]
    real_names = [(p.name, p.kind if p.kind is not inspect.Parameter.POSITIONAL_ONLY
                   else inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in parameters]
    if documented_names != real_names:
        return [f"{name}: parameters {[f'{n} ({k.description})' for n, k in documented_names]}, "
                f"but they are {[f'{n} ({k.description})' for n, k in real_names]}"]
    for (arg, _, default), parameter in zip(doc, parameters):
        if (default is None) != (parameter.default is inspect.Parameter.empty):
            problems.append(f"{name}: {arg.arg} has a default in one signature only")
        elif default is not None:
            value = eval(compile(ast.Expression(default), name, "eval"), {"sq": sq, **vars(sq)})  # noqa: S307
            if value != parameter.default:
                problems.append(f"{name}: {arg.arg}={ast.unparse(default)}, but the default is {parameter.default!r}")
        if arg.annotation is not None:
            if parameter.annotation is inspect.Parameter.empty:
                problems.append(f"{name}: {arg.arg} is not annotated")
            elif normal(ast.unparse(arg.annotation)) != real_annotation(parameter.annotation):
                problems.append(f"{name}: {arg.arg}: {ast.unparse(arg.annotation)}, "
                                f"but it is {real_annotation(parameter.annotation)}")
    if documented.returns is not None:
        returns = inspect.signature(real).return_annotation
        if real_annotation(returns) != normal(ast.unparse(documented.returns)):
            problems.append(f"{name}: returns {ast.unparse(documented.returns)}, but it returns {real_annotation(returns)}")
    return problems


def compare_class(name: str, documented: ast.ClassDef, real: Any) -> list[str]:
    """A documented class: its type parameters (``Generic[...]``), its fields in order (an attrs
    class's fields, or class-level annotations) and its methods."""
    problems: list[str] = []
    for base in documented.bases:
        if isinstance(base, ast.Subscript) and ast.unparse(base.value) == "Generic":
            parameters = [ast.unparse(e) for e in (base.slice.elts if isinstance(base.slice, ast.Tuple) else [base.slice])]
            if parameters != [p.__name__ for p in getattr(real, "__parameters__", ())]:
                problems.append(f"{name}: Generic{parameters}, but its type parameters are {real.__parameters__}")
    documented_fields = [(s.target.id, normal(ast.unparse(s.annotation))) for s in documented.body
                         if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
    if documented_fields:
        actual = ([(f.name, f.type) for f in attrs.fields(real)] if attrs.has(real)
                  else list(inspect.get_annotations(real).items()))
        if documented_fields != [(n, real_annotation(t)) for n, t in actual]:
            problems.append(f"{name}: fields {documented_fields}, but they are {actual}")
    for method in documented.body:
        if isinstance(method, ast.FunctionDef):
            problems += compare_function(f"{name}.{method.name}", method, getattr(real, method.name))
    return problems


def _parses(code: str) -> ast.stmt | None:
    try:
        return ast.parse(code).body[0]
    except SyntaxError:
        return None


def signature_problems(code: str) -> list[str]:
    """What differs between a ``pyi`` block and streamql (empty: the block is right). The block
    holds callables as ``Name.method(params) -> Return`` (``Stream[T].method`` for a generic
    class's method), attributes as ``Class.attribute: Annotation`` and classes as ``class
    sq.Name(Bases):`` with their fields and methods, as a stub file would."""
    problems: list[str] = []
    for statement in statements(code):
        if statement.startswith("class "):
            header = re.match(r"class ([\w.]+)", statement)
            assert header is not None
            documented = ast.parse(statement.replace(header.group(1), "_", 1)).body[0]
            assert isinstance(documented, ast.ClassDef)
            problems += compare_class(header.group(1), documented, resolve(header.group(1)))
        elif (call := CALL.match(statement)) and isinstance(tree := _parses(f"def _({call['rest']}: ..."), ast.FunctionDef):
            problems += compare_function(call["name"], tree, resolve(call["name"]))
        elif attribute := ATTRIBUTE.match(statement):
            owner, _, field = attribute["name"].rpartition(".")
            actual = inspect.get_annotations(resolve(owner)).get(field)
            if actual is None or real_annotation(actual) != normal(attribute["annotation"]):
                problems.append(f"{attribute['name']}: {attribute['annotation']}, but it is {actual}")
        else:
            problems.append(f"not a signature: {statement!r}")
    return problems
