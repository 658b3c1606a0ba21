"""The ``inferplan`` console command's entry point: how the process starts and ends, apart from the app.

A planning command is short, and most of its time goes to starting Python's libraries and ending the
process, not to planning. Two things here are about that alone; neither changes what a command prints
or returns:

- The cyclic garbage collector is paused while the app's modules are imported. Importing creates tens
  of thousands of long-lived objects (classes, functions, schemas) and no garbage, and every few hundred
  of them the collector would scan them all again. After the imports they are frozen (``gc.freeze``: a
  later collection skips them) and collection resumes for the command itself, so a long command
  (``validate``, ``search``, ``serve``) frees its garbage as usual.
- The command then runs with the youngest generation collected every 50,000 new container objects
  instead of every 700: a plan allocates short-lived results by the hundred thousand, few of them in
  cycles, and each collection costs a pass over the young ones. Garbage in cycles is still freed, in
  larger batches.
- Usage errors typer finds before a command runs (an unknown flag, a value of the wrong type) are
  printed as the one line every input error gets (``cli_usage``), so the app runs with typer's
  standalone mode off and the entry turns its outcome into the exit status.
- The process ends with ``os._exit`` once the output is flushed, skipping the interpreter's teardown,
  which frees every module and catalogue object one by one, a fifth of a short command's time, for
  nothing the command still needs: files are closed by the commands that wrote them and every database
  write is committed before the command returns. An uncaught exception ends the ordinary way, with its
  traceback.
"""

import gc
import os
import sys

YOUNG_COLLECTION_OBJECTS = 50_000  # allocations between collections of the youngest generation (Python's default: 700)


def main() -> None:
    """Run ``inferplan`` with the process's arguments and end the process with the command's status."""
    gc.disable()
    try:
        from inferplan.shells.cli import app_for

        app = app_for(sys.argv[1:2])
    finally:
        gc.freeze()
        gc.set_threshold(YOUNG_COLLECTION_OBJECTS, *gc.get_threshold()[1:])
        gc.enable()
    from typer import Abort

    from inferplan.shells.cli_usage import click_errors

    try:
        done = app(standalone_mode=False)
    except SystemExit as exc:
        code = exc.code
    except click_errors.ClickException as exc:
        from inferplan.shells.cli_usage import refuse

        code = refuse(exc)
    except Abort:  # end of input at a prompt
        print("Aborted!", file=sys.stderr)
        code = 1
    else:
        code = done if isinstance(done, int) else 0  # typer.Exit(n) comes back as n
    if code is not None and not isinstance(code, int):  # sys.exit("message"): printed, status 1
        print(code, file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away (`inferplan fits | head`): nothing more to say
        code = code or 1
    os._exit(code or 0)


if __name__ == "__main__":  # pragma: no cover
    main()
