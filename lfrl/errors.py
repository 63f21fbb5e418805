"""The errors lfrl's Python API raises for a user's input (without torch: `import lfrl` re-exports them)."""

from __future__ import annotations


class LoadError(ValueError):
    """What cannot be loaded: raised by `lfrl.load`, and by the checks of what a learner program
    reads as it starts (lfrl.saved.check_learner_files, which `lfrl gen` and the program's learner
    run). One kind of error for every kind of wrong input: a path that is not a run's folder or
    model, a damaged model.pt or hyperparameters.json, weights of another algorithm or shape, a
    module the run imported (its `--networks`, its environment's) that cannot be imported. The
    message names the file or module and says what is expected; `setting` names the setting whose
    value is refused (load, networks, env_id) where there is one."""

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting
