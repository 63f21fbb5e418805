"""Checks of the LF library reactors' parameters (lf/lib/*.lf).

Each library reactor checks its parameters in one method, `check_parameters`, which its first state
initialiser calls: state initialisers run when the reactors are built, before any reaction, so a
value that cannot work stops the program before it starts. Under lfpy the refusal is
`lf.ParameterError`, which lfpy reports as one error at the line that gave the value (the
instantiation's argument, or the default in the reactor's header). lfc's runtime has no such
class: there the refusal is a ValueError naming the parameter.
"""

from __future__ import annotations

import importlib
import math
import numbers
from collections.abc import Mapping
from typing import Any, NoReturn

from lfrl.config import Config, of


class Parameters:
    """The checks of one reactor's parameters: `lf` is the program's `lf` object, `reactor` the
    reactor (`self` in its `check_parameters` method). Each check returns the value it accepted."""

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

    def whole(self, name: str, minimum: int | None = None, maximum: int | None = None,
              allow_none: bool = False) -> int | None:
        """A whole number (not a bool) from `minimum` to `maximum`; with `allow_none`, also None."""
        value = self.value(name)
        if value is None and allow_none:
            return None
        what = _range("a whole number", minimum, maximum)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
                or minimum is not None and value < minimum or maximum is not None and value > maximum:
            self.refuse(name, f"must be {what}, got {value!r}")
        return int(value)

    def number(self, name: str, minimum: float | None = None, maximum: float | None = None,
               above: float | None = None) -> float:
        """A finite number (not a bool) from `minimum` to `maximum`, greater than `above`."""
        value = self.value(name)
        what = _range("a finite number", minimum, maximum) if above is None else \
            f"a finite number above {_shown(above)}"
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or minimum is not None and value < minimum or maximum is not None and value > maximum \
                or above is not None and value <= above:
            self.refuse(name, f"must be {what}, got {value!r}")
        return float(value)

    def flag(self, name: str) -> bool:
        """True or False (a string such as "no" would count as true)."""
        value = self.value(name)
        if not isinstance(value, bool):
            self.refuse(name, f"must be True or False, got {value!r}")
        return value

    def text(self, name: str, empty: bool = True) -> str:
        """A string; with `empty` False, not an empty one."""
        value = self.value(name)
        if not isinstance(value, str) or not empty and not value:
            self.refuse(name, f"must be {'a' if empty else 'a non-empty'} string, got {value!r}")
        return value

    def mapping(self, name: str, what: str) -> Mapping:
        """A dict of `what` ("the learner's settings")."""
        value = self.value(name)
        if not isinstance(value, Mapping):
            self.refuse(name, f"must be a dict of {what}, got {value!r}")
        return value

    def settings(self, name: str) -> Config:
        """A learner's settings: a dict (CONFIG in a generated program: the algorithm's name under
        "algo", its settings by name), checked and typed as its algorithm's class in lfrl.config."""
        value = self.value(name)
        if not isinstance(value, Mapping | Config):
            self.refuse(name, f"must be a dict of the learner's settings (CONFIG in a generated program), got "
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
        """A gymnasium environment id that gymnasium knows: `ALE/...` for Atari (ale-py), or
        `module:EnvId` for one that `module` registers when imported."""
        value = self.text(name, empty=False)
        import gymnasium

        module, _, env = value.rpartition(":")
        try:
            if module:
                importlib.import_module(module)
            if env.startswith("ALE/"):
                import ale_py

                gymnasium.register_envs(ale_py)
            gymnasium.spec(env)
        except ImportError as exc:
            self.refuse(name, f"{value!r} needs module {exc.name or module!r}, which cannot be imported ({exc})")
        except gymnasium.error.Error as exc:
            self.refuse(name, f"unknown environment {value!r}: {exc}")
        return value


def _range(kind: str, minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f"{kind} from {_shown(minimum)} to {_shown(maximum)}"
    if minimum == 1 and kind == "a whole number":
        return "a positive whole number"
    if minimum is not None:
        return f"{kind} >= {_shown(minimum)}"
    if maximum is not None:
        return f"{kind} <= {_shown(maximum)}"
    return kind


def _shown(number: float) -> str:
    return f"{number:g}" if isinstance(number, float) else str(number)

