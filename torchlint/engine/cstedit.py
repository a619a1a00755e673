"""The fix toolkit: edits of one file made with libcst, which keeps every comment, blank line and
quote style that the edit does not touch.

Rules find their nodes in the stdlib ``ast`` tree; fixes name those nodes here. :class:`CstMap`
pairs the file's ``ast`` statements with libcst's (one walk over the statements, no position
metadata, which would cost more than the lint) and finds an expression by its kind and order
inside its statement. Each operation of an :class:`Editor` rebuilds the libcst module along the
path to one node, renders it, and turns the difference into one :class:`Edit` anchored at the
node it changed; the operations of one fix are independent edits of the same original source,
which the engine applies together (or not at all).

This module imports libcst: only the engine's fixing path imports it, never a plain lint.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap
import warnings
from collections.abc import Iterable, Sequence

with warnings.catch_warnings():  # libcst 1.0 imports a deprecated mypy_extensions name
    warnings.simplefilter("ignore", DeprecationWarning)
    import libcst as cst

from torchlint.engine.finding import Edit, FixError

# ----- positions ------------------------------------------------------------------------------------


class Offsets:
    """Character offsets of ``ast`` positions in one source, and back to 1-based lines and columns."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.source = ctx.source
        self.starts = [0]
        for line in ctx.lines[:-1]:
            self.starts.append(self.starts[-1] + len(line) + 1)

    def at(self, lineno: int, byte_col: int) -> int:
        return self.starts[lineno - 1] + self.ctx.column(lineno, byte_col) - 1

    def start(self, node: ast.AST) -> int:
        return self.at(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> int:
        return self.at(node.end_lineno, node.end_col_offset)

    def statement_start(self, stmt: ast.stmt) -> int:
        """Where a statement's text begins: its first decorator for a decorated definition."""
        decorators = getattr(stmt, "decorator_list", None)
        if decorators:
            first = decorators[0]
            at = self.start(first)
            return self.source.rfind("@", 0, at)
        return self.start(stmt)

    def line_start(self, offset: int) -> int:
        return self.source.rfind("\n", 0, offset) + 1

    def next_line(self, offset: int) -> int:
        """The start of the line after the one holding ``offset`` (the end of the source at the end)."""
        found = self.source.find("\n", offset)
        return len(self.source) if found < 0 else found + 1

    def begins_line(self, offset: int) -> bool:
        return not self.source[self.line_start(offset) : offset].strip()

    def ends_line(self, offset: int) -> bool:
        """Only blanks or a comment follow ``offset`` on its line."""
        rest = self.source[offset : self.next_line(offset)].strip()
        return not rest or rest.startswith("#")

    def position(self, offset: int) -> tuple[int, int]:
        """1-based line and column of an offset."""
        line = _bisect(self.starts, offset)
        return line + 1, offset - self.starts[line] + 1


def _bisect(starts: list[int], offset: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo


# ----- pairing ast with libcst ----------------------------------------------------------------------

# Node kinds found by order inside their statement: ast type -> libcst type.
_EXPRESSION_KINDS = {
    ast.Call: cst.Call,
    ast.Attribute: cst.Attribute,
    ast.Subscript: cst.Subscript,
    ast.Name: cst.Name,
    ast.BinOp: cst.BinaryOperation,
    ast.UnaryOp: cst.UnaryOperation,
    ast.Compare: cst.Comparison,
    ast.List: cst.List,
    ast.Tuple: cst.Tuple,
    ast.Dict: cst.Dict,
    ast.ListComp: cst.ListComp,
    ast.DictComp: cst.DictComp,
    ast.GeneratorExp: cst.GeneratorExp,
    ast.IfExp: cst.IfExp,
    ast.Lambda: cst.Lambda,
}
# libcst nodes that hold statements of their own (the ast counterparts are separate statements).
_BLOCKS = (cst.IndentedBlock, cst.SimpleStatementSuite, cst.Else, cst.Finally, cst.ExceptHandler, cst.MatchCase)
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


class CstMap:
    """The libcst module of one file and the pairing of its statements with the ``ast`` ones."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.offsets = Offsets(ctx)
        try:
            self.module = cst.parse_module(ctx.source)
        except (cst.ParserSyntaxError, RecursionError) as exc:
            raise FixError(f"libcst cannot parse this file ({str(exc).splitlines()[0]})") from None
        # ast statement -> (libcst node, its ancestors from the module down)
        self.statements: dict[ast.AST, tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = {}
        self._pair(ctx.tree.body, self.module.body, (self.module,))

    # --- statements
    def _pair(self, ast_body: Sequence[ast.stmt], cst_body: Sequence[cst.CSTNode], path: tuple) -> None:
        stmts = iter(ast_body)
        try:
            for node in cst_body:
                if isinstance(node, cst.SimpleStatementLine):
                    for small in node.body:
                        self.statements[next(stmts)] = (small, path + (node,))
                else:
                    stmt = next(stmts)
                    self.statements[stmt] = (node, path)
                    self._pair_compound(stmt, node, path + (node,))
        except StopIteration:
            raise FixError("libcst and ast disagree about this file's statements") from None

    def _pair_suite(self, ast_body, suite, path: tuple) -> None:
        if isinstance(suite, cst.IndentedBlock):
            self._pair(ast_body, suite.body, path + (suite,))
        else:  # a one-line body: `for x in xs: f(x)`
            for stmt, small in zip(ast_body, suite.body):
                self.statements[stmt] = (small, path + (suite,))

    def _pair_compound(self, stmt: ast.stmt, node: cst.CSTNode, path: tuple) -> None:
        if hasattr(node, "body") and hasattr(stmt, "body"):
            self._pair_suite(stmt.body, node.body, path)
        orelse = getattr(node, "orelse", None)
        if isinstance(orelse, cst.If):  # elif: the nested `if` of ast's orelse
            self.statements[stmt.orelse[0]] = (orelse, path)
            self._pair_compound(stmt.orelse[0], orelse, path + (orelse,))
        elif isinstance(orelse, cst.Else):
            self._pair_suite(stmt.orelse, orelse.body, path + (orelse,))
        for handler_ast, handler in zip(getattr(stmt, "handlers", ()), getattr(node, "handlers", ())):
            self._pair_suite(handler_ast.body, handler.body, path + (handler,))
        final = getattr(node, "finalbody", None)
        if final is not None:
            self._pair_suite(stmt.finalbody, final.body, path + (final,))
        for case_ast, case in zip(getattr(stmt, "cases", ()), getattr(node, "cases", ())):
            self._pair_suite(case_ast.body, case.body, path + (case,))

    def statement(self, stmt: ast.AST) -> tuple[cst.CSTNode, tuple]:
        try:
            return self.statements[stmt]
        except KeyError:
            raise FixError("statement not found in the libcst tree") from None

    def member(self, stmt: ast.AST) -> tuple[cst.CSTNode, tuple]:
        """The node that stands for ``stmt`` in the list holding it: its whole line when the line
        holds nothing else, else the small statement itself (``a; b``, ``for x in y: f(x)``)."""
        node, path = self.statement(stmt)
        line = path[-1]
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            return line, path[:-1]
        return node, path

    # --- expressions
    def expression(self, node: ast.AST) -> tuple[cst.CSTNode, tuple]:
        """The libcst node of an ``ast`` expression: the same kind, at the same rank in the
        source order of its statement."""
        kind = _EXPRESSION_KINDS.get(type(node))
        if kind is None:
            raise FixError(f"cannot edit a {type(node).__name__} expression")
        stmt = self._statement_of(node)
        same = sorted(
            (n for n in _own_nodes(stmt) if type(n) is type(node)),
            key=lambda n: (n.lineno, n.col_offset, -n.end_lineno, -n.end_col_offset),
        )
        rank = next((i for i, n in enumerate(same) if n is node), None)
        owner, path = self.statement(stmt)
        found = [(n, p) for n, p in _own_cst_nodes(owner, path) if type(n) is kind]
        if rank is None or len(found) != len(same):
            raise FixError("libcst and ast disagree about this statement's expressions")
        return found[rank]

    def _statement_of(self, node: ast.AST) -> ast.stmt:
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, ast.stmt):
                return ancestor
        raise FixError("expression outside any statement")


def _own_nodes(stmt: ast.stmt) -> Iterable[ast.AST]:
    """The nodes of a statement's own text: not those of the statements in its body."""
    stack = [value for name, value in ast.iter_fields(stmt) if name not in _STATEMENT_LISTS]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, ast.AST) and not isinstance(item, ast.stmt):
            yield item
            stack.extend(ast.iter_child_nodes(item))


def _own_cst_nodes(node: cst.CSTNode, path: tuple) -> list[tuple[cst.CSTNode, tuple]]:
    """libcst counterpart of ``_own_nodes``, in pre-order, with each node's ancestors; names that
    are not expressions in ast (attribute names, keywords, parameters, definitions) left out."""
    found = []

    def visit(current, ancestors):
        for child in current.children:
            if isinstance(child, _BLOCKS) or (isinstance(child, cst.If) and child is getattr(current, "orelse", None)):
                continue
            if isinstance(child, cst.Name) and not _is_expression_name(current, child):
                continue
            found.append((child, ancestors))
            visit(child, ancestors + (child,))

    visit(node, path + (node,))
    return found


def _is_expression_name(parent: cst.CSTNode, name: cst.Name) -> bool:
    if isinstance(parent, cst.Attribute):
        return name is not parent.attr
    if isinstance(parent, cst.Arg):
        return name is not parent.keyword
    if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Param, cst.ImportAlias, cst.NameItem)):
        return False
    if isinstance(parent, cst.AsName):
        return False  # `except E as e`, `import a as b`: no ast.Name (with-items are rare in fixes)
    return not isinstance(parent, (cst.Import, cst.ImportFrom))


def _replace_child(parent: cst.CSTNode, old: cst.CSTNode, new) -> cst.CSTNode:
    """``parent`` with its child ``old`` replaced by ``new``: a node, a list of nodes spliced into
    the sequence holding ``old``, or an empty list to remove it."""
    for field in dataclasses.fields(parent):
        value = getattr(parent, field.name)
        if value is old and not isinstance(new, list):
            return parent.with_changes(**{field.name: new})
        if isinstance(value, (list, tuple)) and any(item is old for item in value):
            spliced = []
            for item in value:
                if item is old:
                    spliced.extend(new if isinstance(new, list) else [new])
                else:
                    spliced.append(item)
            return parent.with_changes(**{field.name: spliced})
    raise FixError("node not found under its parent")


def _rebuild(path: tuple, old: cst.CSTNode, new) -> cst.Module:
    """The module with ``old`` (whose ancestors are ``path``) replaced by ``new``."""
    for parent in reversed(path):
        replaced = _replace_child(parent, old, new)
        old, new = parent, replaced
    return new


# ----- the editor fixes use -------------------------------------------------------------------------

_ATOMS = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.Integer,
    cst.Float,
    cst.List,
    cst.Dict,
    cst.Set,
    cst.ListComp,
    cst.DictComp,
    cst.SetComp,
    cst.Ellipsis,
)


def parenthesized(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` wrapped in parentheses unless it is an atom (or already wrapped)."""
    if isinstance(expr, _ATOMS) or getattr(expr, "lpar", None):
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


class Editor:
    """What a fix's ``build`` receives: operations on one file that each record an :class:`Edit`.
    Nodes are ``ast`` nodes of the linted tree; code is given as source text."""

    def __init__(self, ctx, cstmap: CstMap):
        self.ctx = ctx
        self.map = cstmap
        self.offsets = cstmap.offsets
        self.source = ctx.source
        self.edits: list[Edit] = []
        # Edit -> the line of the statement it puts code before or after: where an insertion
        # falls between two notebook cells, it goes into that statement's cell.
        self.anchors: dict[Edit, int] = {}
        self._original = cstmap.module.code

    # --- recording
    def _record(
        self, module: cst.Module, start: int, end: int, within: bool = False, next_to: ast.stmt | None = None
    ) -> None:
        """Turn the rendered ``module`` into one edit anchored at [start, end) of the original: it
        begins at ``start`` at the latest and ends at ``end`` at the earliest (so an insertion next
        to identical text lands where it was meant), or, ``within``, as tight as the change inside
        the span allows. ``next_to``: the statement the new code goes before or after."""
        old, new = self._original, module.code
        if old == new:
            return
        limit = min(len(old), len(new))
        prefix = 0
        while prefix < limit and old[prefix] == new[prefix]:
            prefix += 1
        suffix = 0
        while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
            suffix += 1
        if within:
            first = min(prefix, end)
            last = max(len(old) - suffix, start, first)
        else:
            first = min(prefix, start)
            last = max(len(old) - suffix, end, first)
        delta = len(new) - len(old)
        edit = self._add(first, last, new[first : last + delta])
        if next_to is not None:
            self.anchors.setdefault(edit, next_to.lineno)

    def _add(self, start: int, end: int, text: str) -> Edit:
        line, column = self.offsets.position(start)
        end_line, end_column = self.offsets.position(end)
        edit = Edit(line, column, end_line, end_column, text)
        self.edits.append(edit)
        return edit

    def _replace_expression(self, node: ast.AST, build) -> None:
        found, path = self.map.expression(node)
        self._record(_rebuild(path, found, build(found)), self.offsets.start(node), self.offsets.end(node), True)

    # --- expressions
    def replace(self, node: ast.AST, code: str) -> None:
        """Replace an expression with ``code`` (parenthesised when it is not an atom)."""
        self._replace_expression(node, lambda old: parenthesized(_expression(code)).with_changes())

    def rename_attribute(self, node: ast.Attribute, name: str) -> None:
        """``x.view`` -> ``x.reshape``."""
        self._replace_expression(node, lambda old: old.with_changes(attr=cst.Name(name)))

    def unwrap(self, node: ast.AST, inner: ast.AST) -> None:
        """Replace ``node`` (``F.softmax(x, dim=1)``) with its part ``inner`` (``x``)."""
        found, path = self.map.expression(node)
        part, _ = self.map.expression(inner)
        if isinstance(found, (cst.Call, cst.Attribute, cst.Subscript)) and not isinstance(path[-1], cst.Arg):
            part = parenthesized(part)
        start, end = self.offsets.start(node), self.offsets.end(node)
        self._record(_rebuild(path, found, part.with_changes()), start, end, True)

    def method_call(self, node: ast.AST, method: str) -> None:
        """``x`` -> ``x.method()`` (``(a * b).method()`` where needed)."""
        self._replace_expression(
            node,
            lambda old: cst.Call(func=cst.Attribute(value=parenthesized(old), attr=cst.Name(method))),
        )

    def wrap_call(self, node: ast.AST, func: str, dropping: str | None = None) -> None:
        """``x`` -> ``func(x)``; ``dropping`` names a keyword to remove from the calls inside ``x``
        (``torch.ones(3, requires_grad=True)`` -> ``nn.Parameter(torch.ones(3))``)."""

        def build(old):
            inner = old.visit(_DropKeyword(dropping)) if dropping else old
            return cst.Call(func=_expression(func), args=[cst.Arg(inner.with_changes(lpar=[], rpar=[]))])

        self._replace_expression(node, build)

    def add_keyword(self, call: ast.Call, name: str, value: str) -> None:
        """Pass ``name=value`` to a call, after its other arguments (keeping a trailing comma)."""

        def build(old: cst.Call) -> cst.Call:
            args = list(old.args)
            new = cst.Arg(
                value=_expression(value),
                keyword=cst.Name(name),
                equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
            )
            if args:
                last = args[-1]
                if isinstance(last.comma, cst.Comma):  # a trailing comma: one argument a line, keep it so
                    before = args[-2].comma if len(args) > 1 else None
                    gap = before.whitespace_after if isinstance(before, cst.Comma) else old.whitespace_before_args
                    new = new.with_changes(comma=last.comma)
                    args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=gap))
                else:
                    args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            return old.with_changes(args=[*args, new])

        self._replace_expression(call, build)

    def remove_argument(self, call: ast.Call, argument: ast.AST) -> None:
        """Drop one positional argument or keyword (an ``ast.keyword``) from a call."""
        keyword = argument.arg if isinstance(argument, ast.keyword) else None
        index = None if keyword is not None else next(i for i, a in enumerate(call.args) if a is argument)

        def build(old: cst.Call) -> cst.Call:
            positional = [a for a in old.args if a.keyword is None and not a.star]
            args = list(old.args)
            target = (
                next(a for a in args if a.keyword is not None and a.keyword.value == keyword)
                if keyword is not None
                else positional[index]
            )
            at = next(i for i, a in enumerate(args) if a is target)
            del args[at]
            if args and at == len(args):  # the last one went: the new last keeps its old comma
                args[-1] = args[-1].with_changes(comma=target.comma)
            return old.with_changes(args=args)

        self._replace_expression(call, build)

    # --- statements
    def insert_before(self, stmt: ast.stmt, code: str) -> None:
        self._insert(stmt, code, after=False)

    def insert_after(self, stmt: ast.stmt, code: str) -> None:
        self._insert(stmt, code, after=True)

    def insert_first(self, owner: ast.AST, code: str) -> None:
        """Insert ``code`` as the first statement of a function's or loop's body (after a docstring)."""
        body = owner.body
        first = body[0]
        if _is_docstring(first) and isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if len(body) == 1:
                return self.insert_after(first, code)
            first = body[1]
        self.insert_before(first, code)

    def _insert(self, stmt: ast.stmt, code: str, after: bool) -> None:
        member, path = self.map.member(stmt)
        holder = path[-1]
        new = _statements(code)
        if isinstance(holder, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            if not all(isinstance(s, cst.SimpleStatementLine) for s in new):
                raise FixError("cannot put a compound statement on a line shared with others")
            new = [small for line in new for small in line.body]
        spliced = [member, *new] if after else [*new, member]
        self._record(_rebuild(path, member, spliced), *self._insertion_point(stmt, after), next_to=stmt)

    def _insertion_point(self, stmt: ast.stmt, after: bool) -> tuple[int, int]:
        if after:
            end = self.offsets.end(stmt)
            at = self.offsets.next_line(end) if self.offsets.ends_line(end) else end
        else:
            start = self.offsets.statement_start(stmt)
            at = self.offsets.line_start(start) if self.offsets.begins_line(start) else start
        return at, at

    def remove(self, stmt: ast.stmt) -> None:
        """Delete a statement (a block left empty gets ``pass``)."""
        member, path = self.map.member(stmt)
        holder = path[-1]
        siblings = holder.body
        replacement: list = []
        if len(siblings) == 1 and not isinstance(holder, cst.Module):
            if isinstance(holder, cst.IndentedBlock):
                replacement = [cst.SimpleStatementLine([cst.Pass()])]
            else:
                replacement = [cst.Pass()]
        start = self.offsets.statement_start(stmt)
        end = self.offsets.end(stmt)
        self._record(_rebuild(path, member, replacement), start, end)

    def move_before(self, stmt: ast.stmt, anchor: ast.stmt) -> None:
        """Move ``stmt`` (with its comments) to just before ``anchor``."""
        self._move(stmt, anchor, after=False)

    def move_after(self, stmt: ast.stmt, anchor: ast.stmt) -> None:
        self._move(stmt, anchor, after=True)

    def _move(self, stmt: ast.stmt, anchor: ast.stmt, after: bool) -> None:
        moved = self._detached(stmt)
        self.remove(stmt)
        member, path = self.map.member(anchor)
        if not isinstance(path[-1], (cst.IndentedBlock, cst.Module)):
            raise FixError("cannot move a statement onto a line shared with others")
        spliced = [member, moved] if after else [moved, member]
        self._record(_rebuild(path, member, spliced), *self._insertion_point(anchor, after), next_to=anchor)

    def _detached(self, stmt: ast.stmt) -> cst.BaseStatement:
        """``stmt`` as a statement line of its own, keeping its comments but not blank lines above it."""
        member, _ = self.map.member(stmt)
        if not isinstance(member, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            member = cst.SimpleStatementLine([member.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])
        return member.with_changes(leading_lines=[line for line in member.leading_lines if line.comment])

    def decorate(self, func: ast.FunctionDef | ast.AsyncFunctionDef, decorator: str) -> None:
        """Add ``@decorator`` as the innermost decorator of a function."""
        node, path = self.map.statement(func)
        new = node.with_changes(decorators=[*node.decorators, cst.Decorator(_expression(decorator))])
        at = self.offsets.line_start(self.offsets.start(func))
        self._record(_rebuild(path, node, new), at, at, next_to=func)

    def wrap_with(self, stmt: ast.stmt, item: str) -> None:
        """Put ``stmt`` inside ``with item:`` (its comments stay above the ``with``)."""
        member, path = self.map.member(stmt)
        if not isinstance(path[-1], (cst.IndentedBlock, cst.Module)):
            raise FixError("cannot wrap a statement that shares its line")
        inner = member.with_changes(leading_lines=[])
        wrapped = cst.With(
            items=[cst.WithItem(_expression(item))],
            body=cst.IndentedBlock([inner]),
            leading_lines=member.leading_lines,
        )
        start = self.offsets.line_start(self.offsets.statement_start(stmt))
        self._record(_rebuild(path, member, wrapped), start, self.offsets.end(stmt))

    def wrap_in_main(self, moved: Sequence[ast.stmt], name: str, global_names: Sequence[str]) -> None:
        """Move the module-level statements ``moved`` (in order) into ``def name():`` at the end of the
        module, declaring ``global_names`` global there, and call it under
        ``if __name__ == "__main__":``."""
        module = self.map.module
        moving = {id(self.map.member(stmt)[0]) for stmt in moved}
        if any(not isinstance(path[-1], cst.Module) for path in (self.map.member(s)[1] for s in moved)):
            raise FixError("only module-level statements can move into a function")
        kept = [s for s in module.body if id(s) not in moving]
        # Blank lines inside the function carry no indentation; the first statement starts right away.
        body = [
            s.with_changes(
                leading_lines=[line if line.comment else line.with_changes(indent=False) for line in s.leading_lines]
            )
            for s in module.body
            if id(s) in moving
        ]
        body[0] = body[0].with_changes(leading_lines=[line for line in body[0].leading_lines if line.comment])
        if global_names:
            body.insert(0, cst.SimpleStatementLine([cst.Global([cst.NameItem(cst.Name(n)) for n in global_names])]))
        function = cst.FunctionDef(
            name=cst.Name(name),
            params=cst.Parameters(),
            body=cst.IndentedBlock(body),
            leading_lines=[cst.EmptyLine(), cst.EmptyLine()],
        )
        guard = _statements(f'if __name__ == "__main__":\n    {name}()')[0].with_changes(
            leading_lines=[cst.EmptyLine(), cst.EmptyLine()]
        )
        start = self.offsets.line_start(self.offsets.statement_start(moved[0]))
        self._record(module.with_changes(body=[*kept, function, guard]), start, len(self.source))

    # --- names and imports
    def spell(self, qualname: str) -> str:
        """How this file names ``qualname`` through its module-level imports (``nn.ModuleList`` after
        ``import torch.nn as nn``); adds ``import <package>`` when nothing imports it."""
        best = None
        for bound, imported in _module_level_aliases(self.ctx.tree):
            if qualname == imported or qualname.startswith(imported + "."):
                if best is None or len(imported) > len(best[1]):
                    best = (bound, imported)
        if best is not None:
            bound, imported = best
            return bound + qualname[len(imported) :]
        package = qualname.split(".", 1)[0]
        self.add_import(f"import {package}")
        return qualname

    def add_import(self, statement: str) -> None:
        """Add an import after the file's first block of imports (or its docstring)."""
        body = self.ctx.tree.body
        anchor = None
        for index, stmt in enumerate(body):
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) or index == 0 and _is_docstring(stmt):
                anchor = stmt
            else:
                break
        if anchor is not None:
            self.insert_after(anchor, statement)
        elif body:
            self.insert_before(body[0], statement)
        else:
            self._add(len(self.source), len(self.source), statement + "\n")


def _module_level_aliases(tree: ast.Module) -> list[tuple[str, str]]:
    """(bound name, imported qualname) of imports at module level (including in top-level if/try)."""
    found = []
    stack = list(tree.body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    found.append((alias.asname, alias.name))
                else:
                    top = alias.name.split(".", 1)[0]
                    found.append((top, top))
        elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
            for alias in stmt.names:
                if alias.name != "*":
                    found.append((alias.asname or alias.name, f"{stmt.module}.{alias.name}"))
        elif isinstance(stmt, (ast.If, ast.Try)):
            stack.extend(stmt.body)
            stack.extend(getattr(stmt, "orelse", []))
            for handler in getattr(stmt, "handlers", []):
                stack.extend(handler.body)
    return found


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _expression(code: str) -> cst.BaseExpression:
    try:
        return cst.parse_expression(code)
    except cst.ParserSyntaxError:
        raise FixError(f"not an expression: {code!r}") from None


def _statements(code: str) -> list[cst.BaseStatement]:
    try:
        return list(cst.parse_module(textwrap.dedent(code).strip("\n") + "\n").body)
    except cst.ParserSyntaxError:
        raise FixError(f"not statements: {code!r}") from None


class _DropKeyword(cst.CSTTransformer):
    def __init__(self, name: str):
        super().__init__()
        self.name = name

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        args = [a for a in updated.args if not (a.keyword is not None and a.keyword.value == self.name)]
        if len(args) == len(updated.args):
            return updated
        if args and isinstance(args[-1].comma, cst.Comma) and not isinstance(updated.args[-1].comma, cst.Comma):
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(args=args)
