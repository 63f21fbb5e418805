"""Checks of the LF library reactors' parameters (lf/lib/*.lf).

Each library reactor checks its parameters in one method, `check_parameters`, which its first state
initialiser calls: state initialisers run when the reactors are built, before any reaction, so a
value that cannot work stops the program before it starts. Under lfpy the refusal is
`lf.ParameterError`, which lfpy reports as one error at the line that gave the value (the
instantiation's argument, or the default in the reactor's header). lfc's runtime has no such
class: there the refusal is a ValueError naming the parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from lfrl.config import ALGORITHMS, SETTINGS, Between, Config, FieldSpec, Settings, checked, conflict, of


def settings(lf: Any, main: Any, template: str | None = None, **fixed: Any) -> Any:
    """A learner program's settings, from its main reactor's parameters (`main`: `self` where the
    program makes its reactors, `config = {= lfrl.parameters.settings(lf, self) =}`): `algo` names
    the algorithm, and each of its settings (lfrl.config) is a parameter of the same name, one
    literal each, which `lfrl run --param NAME=VALUE` may set; but those the program's shape fixes
    (`fixed`: the actors of a program that places each on a node of its own). Each value is checked
    (lfrl.config's `checked`), then all together (`conflict`); one that cannot work is refused as that
    parameter's, which lfpy reports where the value was given (the main reactor's parameter, or
    `--param`). `template`: the
    settings of a template that is not a learner (sampling, multiagent: lfrl.config's
    SETTINGS), whose programs check them in their main reactor (`state settings = {= ... =}`) and pass
    each on as a reactor parameter."""
    check = Parameters(lf, main)
    if template is not None:
        cls: type[Settings] = SETTINGS[template]
    else:
        algo = check.value("algo")
        if algo not in ALGORITHMS:
            check.refuse("algo", f"must be one of {', '.join(ALGORITHMS)}, got {algo!r}")
        cls = ALGORITHMS[algo]
    given = {f.name: check.setting(f) for f in cls.fields() if hasattr(main, f.name) and f.name not in fixed}
    settings = cls(**given, **fixed)
    problem = conflict(settings)
    if problem is not None:
        check.refuse(*problem)
    return settings


class Parameters:
    """The checks of one reactor's parameters: `lf` is the program's `lf` object, `reactor` the
    reactor (`self` in its `check_parameters` method). Each check returns the value it accepted;
    a value's own checks are lfrl.config's (`checked`), whose message says what it must be."""

    def __init__(self, lf: Any, reactor: Any) -> None:
        self.lf = lf
        self.reactor = reactor

    def refuse(self, name: str, message: str) -> NoReturn:
        """Refuse the value of parameter `name`, saying why (`message`, e.g. "must be ..., got 3")."""
        error = getattr(self.lf, "ParameterError", None)  # an lfpy extension: lfc's runtime has none
        if error is None:
            raise ValueError(f"parameter {name}: {message}")
        raise error(name, message)

    def value(self, name: str) -> Any:
        return getattr(self.reactor, name)

    def setting(self, spec: FieldSpec) -> Any:
        """The value of parameter `spec.name`, as lfrl.config's one check of a setting's value takes it
        (`checked`), or refused with its message."""
        try:
            return checked(spec, self.value(spec.name))
        except ValueError as exc:
            self.refuse(spec.name, str(exc))

    def whole(self, name: str, minimum: int | None = None, maximum: int | None = None,
              allow_none: bool = False) -> int | None:
        """A whole number (not a bool) from `minimum` to `maximum`; with `allow_none`, also None."""
        return self.setting(FieldSpec(name, int, None, "", allow_none, Between(minimum, maximum)))

    def number(self, name: str, minimum: float | None = None, maximum: float | None = None,
               above: float | None = None) -> float:
        """A finite number (not a bool) from `minimum` to `maximum`, or greater than `above`."""
        between = Between(minimum, maximum) if above is None else Between(above, maximum, exclusive=True)
        return self.setting(FieldSpec(name, float, None, "", between=between))

    def flag(self, name: str) -> bool:
        """True or False (a string such as "no" would count as true)."""
        return self.setting(FieldSpec(name, bool, None, ""))

    def text(self, name: str, empty: bool = True) -> str:
        """A string; with `empty` False, not an empty one."""
        return self.setting(FieldSpec(name, str, None, "", check=None if empty else "nonempty"))

    def mapping(self, name: str, what: str) -> Mapping:
        """A dict of `what` ("the learner's settings")."""
        value = self.value(name)
        if not isinstance(value, Mapping):
            self.refuse(name, f"must be a dict of {what}, got {value!r}")
        return value

    def settings(self, name: str) -> Config:
        """A learner's settings: its algorithm's class in lfrl.config (what a generated program gives
        its reactors: `settings`), or a dict of them (the algorithm's name under "algo", its settings
        by name), checked and typed."""
        value = self.value(name)
        if not isinstance(value, Mapping | Config):
            self.refuse(name, f"must be a learner's settings (lfrl.parameters.settings of a generated program), got "
                              f"{value!r:.80}")
        try:
            return of(value)
        except ValueError as exc:
            self.refuse(name, str(exc))

    def learner_files(self, name: str, settings: Config) -> None:
        """What a learner reads as it starts, that its `settings` (parameter `name`) name: the networks
        module and the weights to start from (lfrl.saved.check_learner_files, from the program's
        folder). `lfrl gen` checked them, but they may have changed since."""
        from lfrl.errors import LoadError
        from lfrl.saved import check_learner_files

        try:
            check_learner_files(settings, self.lf.source_directory())
        except LoadError as exc:
            self.refuse(name, f"{exc.setting}: {exc}")

    def env_id(self, name: str) -> str:
        """A gymnasium environment id that gymnasium knows (lfrl.envs.check_id): `ALE/...` for Atari
        (ale-py), or `module:EnvId` for one that `module` registers when imported."""
        value = self.setting(FieldSpec(name, str, None, "", check="env_id"))
        from lfrl.envs import check_id

        try:
            check_id(value)
        except ValueError as exc:
            self.refuse(name, str(exc))
        return value
