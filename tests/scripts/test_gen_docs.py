"""scripts/gen-docs.py: the generated pages hold every role setting and refusal, and --check finds a stale
page and a broken link."""

import importlib.util
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("gen_docs", REPO / "scripts" / "gen-docs.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

SPEC = """
argument_specs:
  main:
    short_description: A test role
    options:
      r_count: {type: int, default: 8, description: How many.}
      r_mode: {type: str, default: auto, choices: [auto, never], description: [When., Really.]}
      r_job:
        type: dict
        default: {}
        description: The job.
        options:
          name: {type: str, description: Its name.}
  check:
    short_description: Read-only
    options:
      r_count: {type: int, default: 8}
"""

TASKS = """
- name: R | Check the settings
  ansible.builtin.assert:
    that: r_count | int > 0
    fail_msg: "{{ inventory_hostname }}: r_count must be > 0 (is {{ r_count }}); set r_count: 8."
- name: R | A block
  block:
    - name: R | Refuse a bad mode
      ansible.builtin.fail:
        msg: >-
          {% if r_mode == 'x' %}{{ inventory_hostname }}: r_mode x is gone{% else %}r_mode {{ r_mode }} is
          unknown: use auto or never{% endif %}
      when: r_mode not in ['auto', 'never']
"""


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel in ("plugins/module_utils/ascend_errors.py", "plugins/module_utils/triage.py",
                "payload/src/ascendops_trainer/status.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, root / rel)
    (root / "roles/r/meta").mkdir(parents=True)
    (root / "roles/r/meta/argument_specs.yml").write_text(SPEC)
    (root / "roles/r/tasks").mkdir()
    (root / "roles/r/tasks/validate_checks.yml").write_text(TASKS)
    (root / "playbooks").mkdir()
    (root / "docs").mkdir()
    for page in ("day2.md", "getting-started.md"):  # the generated pages link these
        (root / "docs" / page).write_text("# page\n")
    (root / "README.md").write_text("# r\n\n[variables](docs/variables.md), [why](docs/troubleshooting.md#exit)\n")
    return root


def test_a_role_setting_appears_with_its_type_default_and_choices(tmp_path):
    page = gen.variables_page(_tree(tmp_path))
    assert "| `r_count` | int | `8` |  | How many. |" in page
    assert "| `r_mode` | str | `auto` | `auto`, `never` | When. Really. |" in page
    assert "| `r_job.name` | str |" in page  # suboptions, dotted
    assert "`check` (`tasks_from: check`): Read-only" in page


def test_refusals_and_error_codes_are_listed(tmp_path):
    page = gen.troubleshooting_page(_tree(tmp_path))
    assert "`<host>: r_count must be > 0 (is <r_count>); set r_count: 8.`" in page
    assert "`<host>: r_mode x is gone`" in page and "`r_mode <r_mode> is unknown: use auto or never`" in page
    assert "| `EI0006` | hccl |" in page  # from ascend_errors.py
    assert "| 4 | `EXIT_NONFINITE` |" in page  # from the trainer's status.py
    assert "a rank was killed or crashed" in page  # from triage.py


def test_a_settings_check_whose_message_is_a_role_variable_lists_the_variables_text(tmp_path):
    # The roles' settings checks keep their messages in vars/main.yml (playbooks/validate.yml renders them for
    # every host on the controller; tasks/validate_settings.yml asserts them on one host).
    root = _tree(tmp_path)
    (root / "roles/r/vars").mkdir()
    (root / "roles/r/vars/main.yml").write_text(
        "__r_settings_message: >-\n  {{ inventory_hostname }}: r_name must be set (is '{{ r_name }}').\n")
    (root / "roles/r/tasks/validate_settings.yml").write_text(
        "- name: R | Check the name\n  ansible.builtin.assert:\n    that: r_name | length > 0\n"
        "    fail_msg: \"{{ __r_settings_message }}\"\n")
    page = gen.troubleshooting_page(root)
    assert "- **R | Check the name**: `<host>: r_name must be set (is '<r_name>').`" in page
    assert "__r_settings_message" not in page


def test_check_finds_a_stale_page_and_passes_when_current(tmp_path, capsys):
    root = _tree(tmp_path)
    assert gen.main(["--check", "--root", str(root)]) == 1  # pages missing
    assert gen.main(["--root", str(root)]) == 0
    assert gen.main(["--check", "--root", str(root)]) == 0
    spec = root / "roles/r/meta/argument_specs.yml"
    spec.write_text(SPEC.replace("default: 8, description: How many.", "default: 16, description: How many."))
    capsys.readouterr()
    assert gen.main(["--check", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "docs/variables.md is stale" in err and "troubleshooting" not in err


def test_check_finds_broken_and_outside_links(tmp_path, capsys):
    root = _tree(tmp_path)
    gen.main(["--root", str(root)])
    (root / "docs/README.md").write_text("[a](releases.md) [b](../../shared/facts.md) [c](../README.md)\n"
                                         "[d](https://example.org/x) `[e](nope.md)`\n")
    capsys.readouterr()
    assert gen.main(["--check", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "docs/README.md: link releases.md: no such file" in err
    assert "link ../../shared/facts.md points outside the repository" in err
    assert "../README.md" not in err and "example.org" not in err and "nope.md" not in err


def test_the_repository_pages_are_current():
    assert gen.main(["--check"]) == 0
