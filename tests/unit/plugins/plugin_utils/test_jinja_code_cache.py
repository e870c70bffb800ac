"""jinja_code_cache: compiled code read back renders exactly as a fresh compile, and only where it is the same code."""

import os

import jinja2
import pytest
from ansible_collections.ascendops.cluster.plugins.plugin_utils import jinja_code_cache as jcc
from jinja2.utils import pass_context


def shout(value):
    return str(value).upper()


@pass_context
def shout_ctx(ctx, value):
    return f"{ctx.get('prefix', '')}{str(value).upper()}"


@pytest.fixture
def env_class(tmp_path):
    """A fresh Environment class with the cache installed (the global jinja2.Environment is left alone)."""
    class Env(jinja2.Environment):
        pass
    context = {"escape": None}
    cache = jcc.CodeCache(str(tmp_path / "cache"), lambda: context["escape"], "test")
    uninstall = jcc.install(Env, cache)
    Env.cache_under_test, Env.context = cache, context
    yield Env
    uninstall()


def make(env_class, **settings):
    env = env_class(**settings)
    env.filters["shout"] = shout
    return env


def test_a_read_back_template_renders_as_the_compiled_one(env_class):
    source = ("{% for x in items %}{{ x | shout }}{% if not loop.last %},{% endif %}{% endfor %} "
              "{{ missing | default('d') }}")
    first = make(env_class).from_string(source).render(items=["a", "b"])
    assert env_class.cache_under_test.misses == 1
    second = make(env_class).from_string(source).render(items=["a", "b"])
    assert env_class.cache_under_test.hits == 1
    assert first == second == "A,B d"


def test_expressions_are_kept_and_keep_undefined_to_none(env_class):
    env = make(env_class)
    assert env.compile_expression("a + 1 if a is number else 'no'")(a=1) == 2
    again = make(env_class).compile_expression("a + 1 if a is number else 'no'")
    assert env_class.cache_under_test.hits == 1
    assert again(a="x") == "no" and again(a=41) == 42
    assert make(env_class).compile_expression("nothing")() is None
    assert make(env_class).compile_expression("nothing", undefined_to_none=False)() is not None


def test_the_key_holds_the_syntax_settings_and_the_callers_compile_context(env_class):
    source = "  {% if true %}\nx\n  {% endif %}\n"
    plain = make(env_class).from_string(source).render()
    trimmed = make(env_class, trim_blocks=True, lstrip_blocks=True).from_string(source).render()
    assert plain != trimmed and env_class.cache_under_test.hits == 0
    square = make(env_class, variable_start_string="[[", variable_end_string="]]")
    assert square.from_string("[[ 1 ]] {{ 1 }}").render() == "1 {{ 1 }}"
    env_class.context["escape"] = True
    make(env_class).from_string(source).render()
    assert env_class.cache_under_test.hits == 0


def test_a_filter_whose_calling_convention_changed_is_compiled_again(env_class):
    make(env_class).from_string("{{ 'a' | shout }}").render()
    env = make(env_class)
    env.filters["shout"] = shout_ctx
    assert env.from_string("{{ 'a' | shout }}").render(prefix="> ") == "> A"
    assert env_class.cache_under_test.hits == 0


def test_a_damaged_entry_is_a_miss_and_is_rewritten(env_class, tmp_path):
    make(env_class).from_string("{{ 1 + 1 }}").render()
    files = [os.path.join(top, name) for top, dirs, names in os.walk(tmp_path / "cache") for name in names]
    assert len(files) == 1
    with open(files[0], "wb") as handle:
        handle.write(b"\x00garbage")
    assert make(env_class).from_string("{{ 1 + 1 }}").render() == "2"
    assert make(env_class).from_string("{{ 1 + 1 }}").render() == "2"
    assert env_class.cache_under_test.hits == 1


def test_syntax_errors_are_raised_as_before_and_not_kept(env_class, tmp_path):
    class Plain(jinja2.Environment):
        pass
    with pytest.raises(jinja2.TemplateSyntaxError) as plain:
        Plain().from_string("{{ 1 + }}")
    for attempt in range(2):
        with pytest.raises(jinja2.TemplateSyntaxError, match="unexpected") as cached:
            make(env_class).from_string("{{ 1 + }}" + " " * attempt)
        assert cached.value.source == plain.value.source + " " * attempt  # as Jinja raises it uncached
    assert not any(names for top, dirs, names in os.walk(tmp_path / "cache"))


def test_named_templates_go_the_normal_way(env_class):
    env = make(env_class)
    env.loader = jinja2.DictLoader({"t.j2": "{{ 'x' | shout }}"})
    assert env.get_template("t.j2").render() == "X"
    assert env_class.cache_under_test.hits == env_class.cache_under_test.misses == 0


def test_uninstall_restores_the_class(tmp_path):
    class Env(jinja2.Environment):
        pass
    before = Env.compile
    undo = jcc.install(Env, jcc.CodeCache(str(tmp_path)))
    assert Env.compile is not before
    undo()
    assert Env.compile is before


def test_prune_empties_a_cache_over_its_limit(env_class, tmp_path):
    for i in range(3):
        make(env_class).from_string(f"{{{{ {i} }}}}").render()
    directory = str(tmp_path / "cache")
    assert jcc.prune(directory, 10) == 3
    assert jcc.prune(directory, 2) == 3
    assert jcc.prune(directory, 2) == 0
    assert jcc.prune(str(tmp_path / "none"), 2) == 0
