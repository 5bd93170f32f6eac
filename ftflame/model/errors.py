"""Errors the command line turns into one line on stderr and exit code 2."""


class InputError(Exception):
    """Bad input: the message names the file, what is wrong and what to do."""

    def __init__(self, path, problem, hint=""):
        self.path = str(path)
        self.problem = problem
        self.hint = hint
        super().__init__(self.line())

    def line(self) -> str:
        msg = f"{self.path}: {self.problem}"
        if self.hint:
            msg += f" ({self.hint})"
        return msg
