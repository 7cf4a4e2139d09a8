"""The ``dy2st`` command line: show what dy2st makes of a function in a file.

    dy2st dump examples/seed_flag_model.py::model                # the transformed Python source
    dy2st dump examples/seed_flag_model.py::model --ir --arg x=f32[512] --arg flag=int64[]
    dy2st dump examples/seed_flag_model.py::model --passes --arg x=f32[512] --arg flag=int64[]
    dy2st passes                                                 # the pass pipeline

An input signature is given one ``--arg NAME=VALUE`` per parameter. VALUE is an array type,
``DTYPE[DIMS]`` (``float32[512,512]``, ``f32[512]``, ``int64[]`` for a 0-d array), or a Python
literal (``3``, ``True``, ``'relu'``), or a tuple/list/dict literal nesting both
(``(f32[3], f32[3])``). Only an array's shape and dtype matter to the graph, so arrays are stand-ins
that allocate nothing (a read-only zero seen through zero strides): ``f32[200000,200000]`` works.

``dump`` imports FILE to find FUNC, so the file's top-level code runs (its
``if __name__ == "__main__":`` block does not); what it prints goes to stderr, leaving stdout to the
dump.

Exit codes: 0 on success, 1 when dy2st rejects the function or importing FILE raises (the error
names the user's file and line), 2 for a usage error (bad option, missing file or function,
malformed signature, unknown pass).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from dy2st.errors import Dy2stError, SourceLocation, instruction_positions
from dy2st.runtime.user_code import is_library_file

_DUMP_EXAMPLES = """\
examples:
  dy2st dump examples/two_branch_model.py::model
      print the transformed Python source of model
  dy2st dump examples/two_branch_model.py::model --ir --arg X1=f32[64,128] --arg X2=f32[64,128]
      print the optimized IR for that input signature
  dy2st dump examples/seed_flag_model.py::model --before --locs --arg x=float32[512] --arg flag=int64[]
      print the IR before any pass, each op followed by its source line (# seed_flag_model.py:LINE)
  dy2st dump examples/seed_flag_model.py::model --after dce --arg x=f32[512] --arg flag=int64[]
      print the IR right after the 'dce' pass
  dy2st dump examples/newton_sqrt.py::newton_sqrt --passes --executor --arg a=f64[] --arg tol=1e-12
      print the IR after every pass, then the generated NumPy executor
  dy2st dump examples/two_branch_model.py::model --ir --dynamic --arg X1=f32[64,128] --arg X2=f32[64,128]
      print the IR with every array size symbolic (f32[n0,n1]): the graph that serves every size
  dy2st dump examples/gradients.py::relax --grad 0 --arg x=f64[8]
      print the graph of dy2st.value_and_grad(relax): its while loop, the loop's adjoint, a cond

argument values (--arg NAME=VALUE):
  f32[512,512]  float32[512,512]  int64[]  bool[4]   an array of that dtype and shape
                                                    (IR names f32/i64/bool or NumPy names)
  3  2.5  True  'relu'  None                         a Python constant (the graph is
                                                    specialised on its value; in a program, a
                                                    number whose value changes between calls
                                                    becomes a graph input: docs/daily-use.md)
  (f32[3], f32[3])  [i64[2], 4]  {'w': f32[3]}      containers nesting both
  Only shapes and dtypes matter: arrays are stand-ins that allocate no memory.

FILE is imported to find FUNC: its top-level code runs (its 'if __name__ == "__main__":'
block does not), and what it prints goes to stderr, so stdout holds only the dump.

Every IR printout starts with a comment line per 'for' loop over a Python range: rolled into a
while_loop, or unrolled and why (docs/shapes.md).

exit codes:
  0  success
  1  dy2st rejects the function, or importing FILE raises (one error naming the file and line)
  2  a usage error: bad option, missing file or function, malformed --arg, unknown pass
"""

_PASSES_EXAMPLES = """\
example:
  dy2st passes
      list the passes graphs go through, in the order they run (the NumPy lowering last)
"""

_MAIN_EXAMPLES = """\
examples:
  dy2st dump examples/seed_flag_model.py::model
  dy2st dump examples/seed_flag_model.py::model --ir --arg x=f32[512] --arg flag=int64[]
  dy2st passes

Run 'dy2st dump --help' for every option of dump.
"""


class UsageError(Exception):
    """A mistake on the command line (exit code 2)."""


class ImportFailed(Dy2stError):
    """The user's file raised while being imported (exit code 1): the line that raised and the
    exception, without the traceback through importlib."""


# --- the argument parser ---------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The ``dy2st`` argument parser, with one sub-parser per subcommand."""
    parser = argparse.ArgumentParser(
        prog="dy2st",
        description="dy2st converts NumPy functions with Python control flow into static SSA\n"
        "graphs. This tool shows each stage: the transformed source, the IR before and after\n"
        "the optimizing passes, and the generated NumPy executor.",
        epilog=_MAIN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from dy2st import __version__

    parser.add_argument("--version", action="version", version=f"dy2st {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    _add_dump_parser(commands)
    commands.add_parser(
        "passes",
        help="list the default pass pipeline",
        description="List the passes of the default pipeline in the order they run; these are\n"
        "the names 'dump --after' accepts.",
        epilog=_PASSES_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def _add_dump_parser(commands) -> None:
    dump = commands.add_parser(
        "dump",
        help="print the transformed source, IR or executor of a function",
        description="Print what dy2st makes of FILE::FUNC. Without options: the transformed\n"
        "Python source. The IR options need the input signature: one --arg per parameter\n"
        "without a default. With several outputs, each is preceded by a '// ----' header.",
        epilog=_DUMP_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    dump.add_argument(
        "target", metavar="FILE::FUNC", help="a Python file and a function (or Class.method) defined in it"
    )
    dump.add_argument(
        "--arg",
        dest="args",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="one input of the signature: an array type DTYPE[DIMS] or a Python literal",
    )
    dump.add_argument("--ir", action="store_true", help="print the optimized IR (after every pass)")
    dump.add_argument("--before", action="store_true", help="print the IR before any pass")
    dump.add_argument(
        "--after",
        metavar="PASS",
        action="append",
        default=[],
        help="print the IR right after the named pass (repeatable; see 'dy2st passes')",
    )
    dump.add_argument("--passes", action="store_true", help="print the IR after each pass")
    dump.add_argument(
        "--executor", action="store_true", help="print the Python the NumPy backend generated for the graph"
    )
    dump.add_argument(
        "--compiled",
        action="store_true",
        help="print the Numba source of the loops the compiled tier compiles for the graph (compiling them now)",
    )
    dump.add_argument(
        "--source",
        action="store_true",
        help="also print the transformed source (the default when nothing else is asked)",
    )
    dump.add_argument(
        "--locs", action="store_true", help="end every IR op with the user's source line (# file.py:LINE)"
    )
    dump.add_argument(
        "--dynamic",
        action="store_true",
        help="make every array size symbolic (to_static(dynamic=True); sizes print as n0, n1, ...)",
    )
    dump.add_argument(
        "--format",
        choices=("text", "dot", "svg"),
        default="text",
        help="how graphs are printed: dy2st's IR text, Graphviz DOT, or SVG drawn by Graphviz's 'dot' "
        "(regions as nested clusters); dot or svg alone prints the optimized graph",
    )
    dump.add_argument(
        "--grad",
        metavar="ARGNUMS",
        help="show the gradient graph of dy2st.value_and_grad(FUNC, argnums) instead (ARGNUMS: 0 or 0,2)",
    )
    dump.add_argument(
        "--memory",
        action="store_true",
        help="print the memory plan's figures: planned peak, live-set lower bound, eager estimate",
    )


# --- FILE::FUNC ------------------------------------------------------------------------------
def split_target(target: str) -> tuple[str, str]:
    """``'model.py::model'`` -> ``('model.py', 'model')``."""
    path, sep, qualname = target.rpartition("::")
    if not sep or not path or not qualname:
        raise UsageError(f"expected FILE::FUNC (for example model.py::model), got {target!r}")
    return path, qualname


def load_module(path: str):
    """Import the file at ``path`` as a module, so ``inspect.getsource`` finds its functions."""
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}")
    # A name of our own: a file called numpy.py or json.py must not replace the real module in
    # sys.modules, and its functions must not look like library code to convert_call.
    name = "_dy2st_target_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs, as a normal import would, so dataclasses and pickling work;
    # the file's directory goes on sys.path so it can import its sibling modules.
    sys.modules[name] = module
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except Dy2stError:
        raise
    except (Exception, SystemExit) as e:  # SystemExit: a script calling sys.exit() at top level
        raise import_failure(path, e) from None
    return module


def import_failure(path: str, error: BaseException) -> ImportFailed:
    """The one error that reports ``error``, raised while importing ``path``, at the user's line."""
    summary = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    if isinstance(error, SyntaxError):
        summary = f"{type(error).__name__}: {error.msg}"
    return ImportFailed(
        f"importing {path} raised {summary}",
        _raising_line(path, error),
        "dy2st dump imports the file to find the function, so its top-level code runs",
    )


def _raising_line(path: str, error: BaseException) -> SourceLocation | None:
    """Where ``error`` was raised in the user's code: the innermost frame outside the standard
    library, site-packages and dy2st, else the innermost in ``path`` (a syntax error: its line)."""
    if isinstance(error, SyntaxError) and error.filename and error.lineno:
        return SourceLocation(error.filename, error.lineno, error.offset - 1 if error.offset else None)
    frames = [(tb.tb_frame.f_code, tb.tb_lasti) for tb in _traceback_entries(error.__traceback__)]
    target = os.path.abspath(path)
    for wanted in (lambda f: not is_library_file(f), lambda f: os.path.abspath(f) == target):
        for code, lasti in reversed(frames):
            if not code.co_filename.startswith("<") and wanted(code.co_filename):
                lineno, _, col, _ = instruction_positions(code)[lasti // 2]
                return SourceLocation(code.co_filename, lineno or code.co_firstlineno, col)
    return None


def _traceback_entries(tb: types.TracebackType | None) -> list[types.TracebackType]:
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    return entries


def find_function(module, qualname: str, path: str):
    """The ``StaticFunction`` for ``qualname`` in ``module`` (plain functions are wrapped)."""
    from dy2st.api import StaticFunction, to_static

    obj: Any = module
    for part in qualname.split("."):
        if not hasattr(obj, part):
            available = sorted(
                n for n, v in vars(module).items() if inspect.isfunction(v) or isinstance(v, StaticFunction)
            )
            hint = f"; functions defined there: {', '.join(available)}" if available else ""
            raise UsageError(f"{path} has no function {qualname!r}{hint}")
        obj = inspect.getattr_static(obj, part) if inspect.isclass(obj) else getattr(obj, part)
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, StaticFunction):
        return obj
    if inspect.isfunction(obj):
        return to_static(obj)
    raise UsageError(f"{path}::{qualname} is a {type(obj).__name__}, not a function")


# --- --arg NAME=VALUE ------------------------------------------------------------------------
_EMPTY_DIMS = re.compile(r"\b([A-Za-z_]\w*)\[\s*\]")


class ArgumentMaker:
    """Turns ``--arg`` values into example inputs: Python literals, and array stand-ins."""

    def parse(self, text: str) -> tuple[str, Any]:
        """``'x=f32[2,3]'`` -> ``('x', <read-only float32 stand-in of shape (2, 3)>)``."""
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise UsageError(f"malformed --arg {text!r}: expected NAME=VALUE, for example x=f32[512]")
        # 'int64[]' is not Python syntax; 'int64[()]' is, and means the same: no dimensions.
        source = _EMPTY_DIMS.sub(r"\1[()]", value.strip())
        try:
            tree = ast.parse(source, mode="eval")
            return name, self.build(tree.body)
        except (SyntaxError, ValueError, TypeError) as e:
            raise UsageError(
                f"malformed --arg {text!r}: {e}; expected an array type such as f32[512,512] or "
                "int64[], or a Python literal such as 3 or 'relu'"
            ) from None

    def build(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Subscript):
            return self.array(node)
        if isinstance(node, ast.Tuple):
            return tuple(self.build(e) for e in node.elts)
        if isinstance(node, ast.List):
            return [self.build(e) for e in node.elts]
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise ValueError("'**' is not allowed in a dict argument")
            return {ast.literal_eval(k): self.build(v) for k, v in zip(node.keys, node.values) if k is not None}
        return ast.literal_eval(node)

    def array(self, node: ast.Subscript) -> np.ndarray:
        from dy2st.ir.types import parse_dtype

        if not isinstance(node.value, ast.Name):
            raise ValueError("an array type is DTYPE[DIMS], for example f32[3,4]")
        dims_node = node.slice
        dims = ast.literal_eval(dims_node)
        dims = dims if isinstance(dims, tuple) else (dims,)
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims):
            raise ValueError(f"dimensions must be non-negative ints, got {dims}")
        try:
            dtype = parse_dtype(node.value.id)
        except TypeError:
            raise ValueError(f"unknown dtype {node.value.id!r}") from None
        return array_stand_in(tuple(dims), dtype)


def array_stand_in(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An array of ``shape`` and ``dtype`` that allocates nothing: one zero seen through zero strides.

    Building, optimizing and generating code for a graph read only its inputs' shapes and dtypes,
    so ``f32[200000,200000]`` must not ask for 149 GiB. The stand-in is read-only: anything that
    tried to write into it (an in-place update of the argument run for real) would raise instead
    of writing through the shared zero.
    """
    return np.broadcast_to(np.zeros((), dtype), shape)


def bind_arguments(static, specs: Sequence[str]) -> tuple[tuple, dict[str, Any]]:
    """Positional and keyword arguments for ``static`` built from the ``--arg`` specs."""
    maker = ArgumentMaker()
    values: dict[str, Any] = {}
    for spec in specs:
        name, value = maker.parse(spec)
        if name in values:
            raise UsageError(f"--arg {name} is given twice")
        values[name] = value
    signature = static.signature
    params = list(signature.parameters.values())
    if params and params[0].name == "self" and "self" not in values:
        raise UsageError(
            f"{static.fn.__qualname__} is a method: its graph needs an instance, so only "
            "its transformed source can be dumped"
        )
    unknown = [n for n in values if n not in signature.parameters]
    if unknown and not any(p.kind is p.VAR_KEYWORD for p in params):
        raise UsageError(f"{static.fn.__name__}{signature} has no parameter {unknown[0]!r}")
    missing = [
        p.name
        for p in params
        if p.name not in values and p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if missing:
        raise UsageError(f"missing --arg for parameter {missing[0]!r} of {static.fn.__name__}{signature}")
    args, kwargs = [], {}
    for p in params:
        if p.name in values and p.kind is p.POSITIONAL_ONLY:
            args.append(values.pop(p.name))
    kwargs.update(values)
    return tuple(args), kwargs


# --- passes ----------------------------------------------------------------------------------
def pipeline_pass_names() -> list[str]:
    """The names of the default pipeline's passes, in order: the NumPy tier's, then the compiled
    tier's (which runs only with Numba installed)."""
    from dy2st.backend.numba.regions import CompiledRegions
    from dy2st.backend.numpy.lowering import numpy_passes

    return [p.name for p in numpy_passes()] + [CompiledRegions.name]


def known_pass_names() -> set[str]:
    """Every pass name dy2st knows (``PASSES_BY_NAME`` when the pipeline module exports it)."""
    from dy2st.passes import pipeline

    return set(getattr(pipeline, "PASSES_BY_NAME", {})) | set(pipeline_pass_names())


def check_pass_names(names: Sequence[str]) -> None:
    in_pipeline = pipeline_pass_names()
    listing = ", ".join(in_pipeline) if in_pipeline else "(none: the pipeline is empty)"
    for name in names:
        if name in in_pipeline:
            continue
        if name in known_pass_names():
            raise UsageError(f"pass {name!r} is not in the default pipeline: {listing}")
        raise UsageError(f"unknown pass {name!r}; the default pipeline runs: {listing}")


# --- dump ------------------------------------------------------------------------------------
class Output:
    """Collects the sections dump prints; headers appear only when there is more than one."""

    def __init__(self):
        self.sections: list[tuple[str, str]] = []

    def add(self, title: str, text: str) -> None:
        self.sections.append((title, text.rstrip("\n")))

    def render(self) -> str:
        if len(self.sections) == 1:
            return self.sections[0][1] + "\n"
        return "".join(f"// ---- {title}\n{text}\n" for title, text in self.sections)


def wants_graph(options: argparse.Namespace) -> bool:
    return bool(
        options.grad is not None
        or options.format != "text"
        or options.ir
        or options.before
        or options.after
        or options.passes
        or options.executor
        or options.memory
        or options.compiled
    )


def run_dump(options: argparse.Namespace) -> str:
    """Everything ``dy2st dump`` prints, as one string."""
    if not wants_graph(options):
        for flag, given in (("--arg", options.args), ("--locs", options.locs), ("--dynamic", options.dynamic)):
            if given:
                raise UsageError(f"{flag} needs an IR option: --ir, --before, --after, --passes or --executor")
    check_pass_names(options.after)
    path, qualname = split_target(options.target)
    module = load_module(path)
    static = find_function(module, qualname, path)
    if options.dynamic:
        from dy2st.api import to_static

        static = to_static(static.fn, dynamic=True)
    out = Output()
    if options.source or not wants_graph(options):
        out.add(f"transformed source of {qualname}", static.code)
    if wants_graph(options):
        args, kwargs = bind_arguments(static, options.args)
        shown = static
        if options.format != "text" and not (options.ir or options.before or options.after or options.passes):
            options.ir = True
        if options.grad is not None:
            shown = _gradient_function(static, options)
            options.ir = options.ir or not (options.before or options.after or options.passes)
        dump_graphs(shown, args, kwargs, options, out)
    return out.render()


def _gradient_function(static, options: argparse.Namespace):
    """``dy2st.value_and_grad(FUNC, argnums)`` for ``--grad ARGNUMS``."""
    from dy2st.gradients import value_and_grad

    if options.executor or options.compiled or options.memory or options.dynamic:
        raise UsageError("--grad shows graphs: use it with --ir, --before, --after or --passes")
    try:
        argnums = tuple(int(k) for k in options.grad.split(","))
    except ValueError:
        raise UsageError(f"--grad takes argument positions such as 0 or 0,2, not {options.grad!r}") from None
    return value_and_grad(static, argnums=argnums if len(argnums) > 1 else argnums[0])


def dump_graphs(static, args: tuple, kwargs: dict, options: argparse.Namespace, out: Output) -> None:
    # Imported here, not at the top: `dy2st --help` and `dy2st passes` start without NumPy's weight.
    from dy2st.backend.numba.executor import tier_passes
    from dy2st.backend.numpy.lowering import numpy_passes
    from dy2st.backend.numpy.target import NUMPY_TARGET
    from dy2st.ir.printer import print_graph
    from dy2st.passes.memory_plan import memory_report
    from dy2st.passes.pipeline import optimize

    def show(graph) -> str:
        if options.format == "dot":
            return graph.to_dot()
        if options.format == "svg":
            return _svg(graph.to_dot())
        return print_graph(graph, locs=options.locs)

    if options.before or options.after or options.passes:
        graph = static.graph(*args, optimize=False, **kwargs)
        if options.before:
            out.add("IR before passes", show(graph))
        after_each = _after_each_printer(options, out, show)
        optimize(graph, passes=[*numpy_passes(), *tier_passes(static.backend)], after_each=after_each)
    if options.ir:
        out.add("IR after all passes", show(static.graph(*args, **kwargs)))
    if options.executor:
        out.add("generated executor", static.executor_source(*args, **kwargs))
    if options.compiled:
        out.add("compiled loops (Numba)", static.compiled_source(*args, **kwargs))
    if options.memory:
        out.add("memory", "\n".join(memory_report(static.graph(*args, **kwargs), NUMPY_TARGET).lines()))


def _svg(dot_text: str) -> str:
    """``dot_text`` drawn as SVG by Graphviz's ``dot`` program."""
    program = shutil.which("dot")
    if program is None:
        raise UsageError(
            "--format svg needs Graphviz's 'dot' program, which is not installed "
            "(apt install graphviz, brew install graphviz); --format dot prints the text it would draw"
        )
    drawn = subprocess.run([program, "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=120)
    if drawn.returncode != 0:
        raise UsageError(f"Graphviz's dot could not draw the graph: {drawn.stderr.strip()}")
    return drawn.stdout


def _after_each_printer(options: argparse.Namespace, out: Output, show: Callable) -> Callable:
    def after_each(pass_name: str, graph, changed: bool) -> None:
        if options.passes or pass_name in options.after:
            status = "changed" if changed else "unchanged"
            out.add(f"IR after {pass_name} ({status})", show(graph))

    return after_each


def run_passes_command() -> str:
    names = pipeline_pass_names()
    if not names:
        return "the default pipeline has no passes\n"
    return "".join(f"{i}. {name}\n" for i, name in enumerate(names, 1))


# --- entry point -----------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 dy2st error, 2 usage error)."""
    parser = build_parser()
    options = parser.parse_args(argv)  # exits with 2 on a malformed command line
    try:
        # The user's code runs while dump imports and stages it: what it prints goes to stderr,
        # so that stdout holds the dump alone (and can be piped or compared).
        with contextlib.redirect_stdout(sys.stderr):
            text = run_dump(options) if options.command == "dump" else run_passes_command()
    except UsageError as e:
        _usage_error(parser, options, str(e))
    except Dy2stError as e:
        print(e, file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


def _usage_error(parser: argparse.ArgumentParser, options: argparse.Namespace, message: str) -> NoReturn:
    prog = f"{parser.prog} {options.command}"
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


if __name__ == "__main__":
    sys.exit(main())
