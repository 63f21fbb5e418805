"""Loading a program with its imports: relative files, packages, and every kind of failure."""

from pathlib import Path

import pytest

from lfpy.diagnostics import Diagnostics
from lfpy.loader import Program, load_program

GAIN = "target Python\nreactor Gain(k = 1) { input x\n output y }\nreactor Other {}\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def load(root: Path, main: str = "Main.lf") -> tuple[Program | None, list[str], Diagnostics]:
    diags = Diagnostics()
    program = load_program(str(root / main), diags)
    headers = [d.header().replace(str(root.resolve()), "DIR") for d in diags.items]
    return program, headers, diags


def test_relative_imports_with_aliases(tmp_path: Path) -> None:
    write(tmp_path, {
        "Main.lf": 'target Python\nimport Gain, Gain as Amp from "lib/Gain.lf"\nmain reactor { g = new Amp() }\n',
        "lib/Gain.lf": GAIN,
    })
    program, headers, diags = load(tmp_path)
    assert headers == [] and program is not None
    lib = str((tmp_path / "lib" / "Gain.lf").resolve())
    assert set(program.models) == {str((tmp_path / "Main.lf").resolve()), lib}
    amp = program.resolve(program.main, "Amp")
    assert amp is not None and amp.name == "Gain" and program.model_of(amp).path == lib
    assert program.resolve(program.main, "Gain") is amp
    assert program.resolve(program.main, "Other") is None  # not imported
    assert program.resolve(program.main, "Nope") is None
    assert program.imported[program.main.path] == {"Gain": (lib, "Gain"), "Amp": (lib, "Gain")}
    assert set(diags.sources) == set(program.models)


def test_transitive_imports_resolve_against_each_importing_file(tmp_path: Path) -> None:
    write(tmp_path, {
        "Main.lf": 'target Python\nimport Mid from "a/Mid.lf"\nmain reactor { m = new Mid() }\n',
        "a/Mid.lf": 'target Python\nimport Gain from "../b/Gain.lf"\nreactor Mid { g = new Gain() }\n',
        "b/Gain.lf": GAIN,
    })
    program, headers, _ = load(tmp_path)
    assert headers == [] and program is not None
    mid = program.resolve(program.main, "Mid")
    assert mid is not None
    gain = program.resolve(program.model_of(mid), "Gain")
    assert gain is not None and gain.loc.file.endswith("Gain.lf")


def test_a_file_imported_twice_is_parsed_once(tmp_path: Path) -> None:
    write(tmp_path, {
        "Main.lf": 'target Python\nimport A from "A.lf"\nimport Gain from "Gain.lf"\nmain reactor {}\n',
        "A.lf": 'target Python\nimport Gain from "Gain.lf"\nreactor A {}\n',
        "Gain.lf": GAIN,
    })
    program, headers, _ = load(tmp_path)
    assert headers == [] and program is not None and len(program.models) == 3
    a = program.models[str((tmp_path / "A.lf").resolve())]
    assert program.resolve(a, "Gain") is program.resolve(program.main, "Gain")


def test_missing_file(tmp_path: Path) -> None:
    write(tmp_path, {"Main.lf": 'target Python\nimport A from "nope.lf"\nmain reactor { a = new A() }\n'})
    program, headers, _ = load(tmp_path)
    assert program is not None
    assert headers == ["DIR/Main.lf:2:1: error: cannot find imported file 'nope.lf' (looked for DIR/nope.lf)"]
    assert program.failed[program.main.path] == {"A"}


def test_missing_reactor_name_suggests_a_close_one(tmp_path: Path) -> None:
    write(tmp_path, {"Main.lf": 'target Python\nimport Gian, Gain as G from "Gain.lf"\nmain reactor {}\n',
                     "Gain.lf": GAIN})
    program, headers, _ = load(tmp_path)
    assert headers == ["DIR/Main.lf:2:8: error: reactor 'Gian' is not defined in 'Gain.lf'; did you mean 'Gain'?"]
    assert program is not None and program.failed[program.main.path] == {"Gian"}
    assert program.resolve(program.main, "G") is not None


def test_import_cycle_names_the_files(tmp_path: Path) -> None:
    write(tmp_path, {
        "Main.lf": 'target Python\nimport A from "A.lf"\nmain reactor {}\n',
        "A.lf": 'target Python\nimport B from "B.lf"\nreactor A {}\n',
        "B.lf": 'target Python\nimport A from "A.lf"\nreactor B {}\n',
    })
    _, headers, _ = load(tmp_path)
    assert headers == ["DIR/B.lf:2:1: error: import cycle: A.lf -> B.lf -> A.lf"]


def test_a_file_importing_itself(tmp_path: Path) -> None:
    write(tmp_path, {"Main.lf": 'target Python\nimport X from "Main.lf"\nmain reactor {}\nreactor X {}\n'})
    _, headers, _ = load(tmp_path)
    assert headers == ["DIR/Main.lf:2:1: error: import cycle: Main.lf -> Main.lf"]


def test_syntax_error_in_an_imported_file(tmp_path: Path) -> None:
    write(tmp_path, {"Main.lf": 'target Python\nimport Bad from "Bad.lf"\nmain reactor {}\n',
                     "Bad.lf": "target Python\nreactor Bad {\n  input\n}\n"})
    program, headers, diags = load(tmp_path)
    assert program is not None
    assert headers == [
        "DIR/Bad.lf:4:1: error: expected an input name, found '}'",
        "DIR/Main.lf:2:1: error: cannot import from 'Bad.lf': it has an error at line 4, column 1",
    ]
    assert str((tmp_path / "Bad.lf").resolve()) in diags.sources


def test_syntax_error_in_the_main_file(tmp_path: Path) -> None:
    write(tmp_path, {"Main.lf": "target Python\nmain reactor {\n"})
    program, headers, diags = load(tmp_path)
    assert program is None
    assert headers == ["DIR/Main.lf:3:1: error: unexpected end of file: the reactor body opened at line 2 is not "
                       "closed with '}'"]
    assert diags.render(diags.items[0]).endswith("\n\n^")


def test_unreadable_main_file(tmp_path: Path) -> None:
    program, headers, _ = load(tmp_path, "Absent.lf")
    assert program is None and headers == ["DIR/Absent.lf:1:1: error: cannot read file: No such file or directory"]


def test_invalid_utf8_in_an_imported_file(tmp_path: Path) -> None:
    write(tmp_path, {"Main.lf": 'target Python\nimport A from "A.lf"\nmain reactor {}\n'})
    (tmp_path / "A.lf").write_bytes(b"target Python\nreactor A { \xfe }")
    _, headers, _ = load(tmp_path)
    assert headers == ["DIR/A.lf:2:13: error: file is not valid UTF-8 (byte 0xfe)",
                       "DIR/Main.lf:2:1: error: cannot import from 'A.lf': it has an error at line 2, column 13"]


# ---------------------------------------------------------------- packages


def package_project(tmp_path: Path, import_line: str) -> None:
    write(tmp_path, {
        "src/Main.lf": f"target Python\n{import_line}\nmain reactor {{}}\n",
        "lf-packages/pkg/src/lib/Gain.lf": GAIN,
        "lf-packages/pkg/src/lib/sub/Count.lf": "target Python\nreactor Count {}\n",
    })


@pytest.mark.parametrize("import_line", ["import Gain from <pkg/Gain.lf>", "import Gain from <pkg>",
                                         "import Count from <pkg/sub/Count.lf>", "import Count from <pkg/sub>"])
def test_package_imports_resolve_in_lf_packages(tmp_path: Path, import_line: str) -> None:
    package_project(tmp_path, import_line)
    program, headers, _ = load(tmp_path, "src/Main.lf")
    assert headers == [] and program is not None
    name = import_line.split()[1]
    reactor = program.resolve(program.main, name)
    assert reactor is not None and "lf-packages" in reactor.loc.file


def test_build_lfc_include_comes_before_lf_packages(tmp_path: Path) -> None:
    package_project(tmp_path, "import Gain from <pkg/Gain.lf>")
    write(tmp_path, {"build/lfc_include/pkg/src/lib/Gain.lf": GAIN})
    program, headers, _ = load(tmp_path, "src/Main.lf")
    gain = program.resolve(program.main, "Gain")
    assert headers == [] and gain is not None and "lfc_include" in gain.loc.file


def test_lf_packages_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"proj/src/Main.lf": "target Python\nimport Gain from <shared/Gain.lf>\nmain reactor {}\n",
                     "store/shared/src/lib/Gain.lf": GAIN})
    monkeypatch.setenv("LF_PACKAGES", str(tmp_path / "store"))
    program, headers, _ = load(tmp_path, "proj/src/Main.lf")
    assert headers == [] and program.resolve(program.main, "Gain") is not None


def test_missing_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LF_PACKAGES", raising=False)
    write(tmp_path, {"src/Main.lf": "target Python\nimport Gain from <nopkg/Gain.lf>\nmain reactor {}\n"})
    program, headers, _ = load(tmp_path, "src/Main.lf")
    assert headers == ["DIR/src/Main.lf:2:1: error: cannot find package <nopkg/Gain.lf> (looked in "
                       "DIR/build/lfc_include/nopkg, DIR/lf-packages/nopkg)"]
    assert program is not None and program.failed[program.main.path] == {"Gain"}


def test_missing_file_in_a_package(tmp_path: Path) -> None:
    package_project(tmp_path, "import Nope from <pkg>")
    _, headers, _ = load(tmp_path, "src/Main.lf")
    assert headers == ["DIR/src/Main.lf:2:1: error: cannot find imported file '<pkg>' "
                       "(looked for DIR/lf-packages/pkg/src/lib/Nope.lf)"]
