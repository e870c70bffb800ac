# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keep the Python code Jinja compiles from ansible-playbook's templates, across forked workers and runs.

ansible-core 2.19 compiles every template and conditional again in each task's forked worker process
(lexing, parsing, code generation and Python's compile): about a quarter of a no-op site.yml's worker CPU
on a 2-core controller. Jinja's compiled code of a source depends only on that source, the environment's
syntax settings and, for each filter and test it calls, how the filter is passed its arguments
(pass_context, pass_environment). Keyed by all of these, the code is kept on disk
(``marshal``, written atomically) and read back instead of compiling again; a filter whose calling
convention changed since makes it a miss. Only ``Environment.compile`` of a whole source and
``compile_expression`` are cached; anything unusual (debugging, raw or named compiles) goes the normal way,
and an error reading or writing the cache is a miss, never a failure.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import marshal
import os
import sys
import tempfile

import jinja2
from ansible_collections.ascendops.cluster.plugins.module_utils.sha256_cache import default_cache_file
from jinja2 import nodes
from jinja2.environment import TemplateExpression
from jinja2.utils import _PassArg

FORMAT = 1
_SETTINGS = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
             "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
             "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "optimized", "is_async")
_expression_source = contextvars.ContextVar("ascendops_jinja_expression_source", default=None)


def default_directory(environ=None):
    """``$XDG_CACHE_HOME/ascendops/jinja``, beside file_sha256's cache."""
    return os.path.join(os.path.dirname(default_cache_file(environ)), "jinja")


def _pass_arg(func):
    mode = _PassArg.from_obj(func) if func is not None else None
    return mode.name if mode is not None else ("" if func is not None else "-")


class CodeCache:
    """The cache directory and the key of a compile. ``context`` gives the extra compile-time state of the
    caller (Ansible's escape_backslashes), part of every key."""

    def __init__(self, directory, context=lambda: None, version=""):
        self.directory = directory
        self.context = context
        self.version = f"{FORMAT}|{sys.version}|{jinja2.__version__}|{version}"
        self.hits = self.misses = 0

    def key(self, env, kind, source):
        digest = hashlib.sha256()
        settings = [type(env).__module__, type(env).__qualname__, repr(self.context()), repr(env.autoescape),
                    _pass_arg(env.finalize), repr(sorted(env.extensions))]
        settings += [repr(getattr(env, name, None)) for name in _SETTINGS]
        for part in [self.version, kind, *settings]:
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(str.encode(source, "utf-8", "surrogateescape"))
        return digest.hexdigest()

    def _path(self, key):
        return os.path.join(self.directory, key[:2], key)

    def load(self, env, key):
        try:
            with open(self._path(key), "rb") as handle:
                filters, tests, code = marshal.loads(handle.read())
            # The calling convention of each filter and test is compiled into the code: it must not have changed.
            if any(_pass_arg(env.filters.get(name)) != mode for name, mode in filters) or any(
                    _pass_arg(env.tests.get(name)) != mode for name, mode in tests):
                code = None
        except Exception:  # a missing, partial or foreign file is a miss
            code = None
        if code is None:
            self.misses += 1
        else:
            self.hits += 1
        return code

    def store(self, env, key, tree, code):
        try:
            names = {nodes.Filter: set(), nodes.Test: set()}
            for kind, found in names.items():
                for node in tree.find_all(kind):
                    found.add(node.name)
            filters = sorted((name, _pass_arg(env.filters.get(name))) for name in names[nodes.Filter])
            tests = sorted((name, _pass_arg(env.tests.get(name))) for name in names[nodes.Test])
            data = marshal.dumps((filters, tests, code))
            path = self._path(key)
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp.", dir=os.path.dirname(path))
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except Exception:  # the cache only saves time
            pass


def prune(directory, limit):
    """Empty the cache when it holds more than ``limit`` entries (templates made at run time, e.g. from
    variables, would otherwise add files forever); it fills again on the next run. Returns the count."""
    try:
        count = sum(len(os.listdir(os.path.join(directory, d))) for d in os.listdir(directory))
    except OSError:
        return 0
    if count > limit:
        for sub in os.listdir(directory):
            for name in os.listdir(os.path.join(directory, sub)):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(directory, sub, name))
    return count


def install(env_class, cache, enabled=lambda: True):
    """Route ``env_class.compile`` (whole sources) and ``compile_expression`` through ``cache``.
    ``enabled()`` is asked on every compile (false: the normal way). Returns a function that undoes it."""
    original_compile = env_class.compile
    original_expression = env_class.compile_expression

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):  # noqa: A001
        expression = _expression_source.get()  # (source, key) of compile_expression's miss
        plain = name is None and filename is None and not raw and not defer_init and enabled()
        if plain and isinstance(source, str):
            key = cache.key(self, "t", source)
            code = cache.load(self, key)
            if code is not None:
                return code
        elif plain and expression is not None and isinstance(source, nodes.Template):
            key = expression[1]
        else:
            return original_compile(self, source, name, filename, raw, defer_init)
        if isinstance(source, str):
            try:
                tree = self._parse(source, name, filename)
            except jinja2.TemplateSyntaxError:
                # raised the normal way (Jinja attaches the source and rewrites the traceback); nothing kept
                return original_compile(self, source, name, filename, raw, defer_init)
        else:
            tree = source
        code = original_compile(self, tree, name, filename, raw, defer_init)
        cache.store(self, key, tree, code)
        return code

    def compile_expression(self, source, undefined_to_none=True):
        if isinstance(source, str) and enabled():
            key = cache.key(self, "e", source)
            code = cache.load(self, key)
            if code is not None:
                template = self.template_class.from_code(self, code, self.make_globals(None), None)
                return TemplateExpression(template, undefined_to_none)
            token = _expression_source.set((source, key))
            try:
                return original_expression(self, source, undefined_to_none)
            finally:
                _expression_source.reset(token)
        return original_expression(self, source, undefined_to_none)

    env_class.compile = compile
    env_class.compile_expression = compile_expression

    def uninstall():
        env_class.compile = original_compile
        env_class.compile_expression = original_expression

    return uninstall
