"""Command-line usage errors as the one line every other input error gets.

Typer refuses an unknown flag, a value of the wrong type, a missing option or a stray argument
before a command runs, in a boxed panel of its own. ``inferplan`` turns each into
``error: --flag: message (allowed: …)`` on stderr with exit status 2 (and, under ``--json``, the
error as JSON on stdout), as ``cli_common.fail`` does for the library's errors, so a script or a
person reads one contract. A bare group (``inferplan catalog``) still shows its help, as typer does.
"""

from __future__ import annotations

import importlib

import typer

from inferplan.errors import InferplanError
from inferplan.shells.cli_common import fail
from inferplan.shells.pydantic_errors import ALLOWED_BY_BOUND, allowed_by
from inferplan.units import unit_hint

def _click_errors():
    """click's exception classes as typer raises them: a vendored click from typer 0.2x, click itself before."""
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:
        return importlib.import_module("click.exceptions")


click_errors = _click_errors()

# pydantic's error type for a value typer could not convert -> what the flag takes
ALLOWED_BY_ERROR_TYPE = {
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_parsing": "a number",
    "bool_parsing": "true or false",
}


def refuse(exc: click_errors.ClickException) -> int:
    """Print ``exc`` as one line (or the group's help for a bare group) and return the exit status."""
    if isinstance(exc, click_errors.NoArgsIsHelpError):  # its message is the group's help, in click's layout
        exc.show()
        return exc.exit_code
    message, field, allowed = describe(exc)
    try:
        fail(f"{field}: {message}" if field else message, field=field, allowed=allowed, detail=message)
    except typer.Exit as done:
        return done.exit_code
    return 2  # pragma: no cover - fail always exits


def describe(exc) -> tuple[str, str | None, str | None]:
    """(message, flag, allowed) for a usage error; the message ends with its ``allowed`` part."""
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "inferplan"
    if isinstance(exc, click_errors.NoSuchOption):
        from inferplan.shells.cli_option_names import closest_options

        options = [o for p in (ctx.command.params if ctx is not None else ()) for o in (*p.opts, *p.secondary_opts)]
        closest = closest_options(exc.option_name, command.partition(" ")[2], options)
        allowed = f"the options '{command} --help' lists" + (f"; closest: {', '.join(closest)}" if closest else "")
        return f"no such option of '{command}' (allowed: {allowed})", exc.option_name, allowed
    if isinstance(exc, click_errors.BadOptionUsage):
        if "does not take a value" in exc.message:  # a switch given a value (--json=yes)
            return "takes no value (allowed: the bare flag)", exc.option_name, "the bare flag"
        return "needs a value", exc.option_name, None
    param = getattr(exc, "param", None)
    flag = _flag(param) if param is not None else None
    if isinstance(exc, click_errors.MissingParameter):
        return f"required by '{command}'", flag, None
    if isinstance(exc, click_errors.BadParameter):
        if isinstance(exc.__cause__, InferplanError):  # a parser the library gives (a token count)
            cause = exc.__cause__
            return cause.describe() if cause.field is None else str(cause), flag, cause.allowed
        error = _first_conversion_error(exc)
        if error is not None and error["type"] in ALLOWED_BY_ERROR_TYPE:
            allowed = ALLOWED_BY_ERROR_TYPE[error["type"]]
            # '500ms' for a seconds flag: the number in the unit its parameter's name ends in (ttft_p95_s)
            allowed = unit_hint(str(error["input"]), getattr(param, "name", None) or "") or allowed
            return f"cannot read {error['input']!r} (allowed: {allowed})", flag, allowed
        allowed = allowed_by(error) if error is not None and error["type"] in ALLOWED_BY_BOUND else None
        if allowed:  # outside the option's min/max
            return f"{error['input']!r} is out of range (allowed: {allowed})", flag, allowed
        return exc.message, flag, None
    group = ctx.command if ctx is not None else None
    if group is not None and hasattr(group, "list_commands"):  # a group: an unknown sub-command
        allowed = ", ".join(group.list_commands(ctx))
        return f"{exc.format_message()} (allowed: {allowed})", None, allowed
    if group is not None and exc.format_message().startswith("Got unexpected extra argument"):
        names = [_flag(p) for p in group.params if getattr(p, "param_type_name", None) == "argument"]
        allowed = (f"{', '.join(names)} as {'its argument' if len(names) == 1 else 'its arguments'}, and every other "
                   "input by its flag") if names else "no arguments: every input by its flag"
        return f"{exc.format_message()}; '{command} --help' lists what it takes (allowed: {allowed})", None, allowed
    return f"{exc.format_message()}; '{command} --help' lists what it takes", None, None


def _flag(param) -> str | None:
    """The option's long name (``--gpus``); an argument's metavar as its command names it (``ID``),
    else its first name."""
    metavar = getattr(param, "metavar", None)
    if getattr(param, "param_type_name", None) == "argument" and metavar:
        return metavar.strip("[].") or metavar
    names = list(getattr(param, "opts", ()) or ())
    longs = [n for n in names if n.startswith("--")]
    return (longs or names or [None])[0]


def _first_conversion_error(exc: click_errors.BadParameter) -> dict | None:
    """The pydantic error behind a value typer could not convert, if that is the cause."""
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if not callable(errors):
        return None
    found = errors()
    return found[0] if found else None
