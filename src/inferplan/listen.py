"""Why the calculator cannot listen where it is asked to, as an error naming the field to change and what it
takes: a port another server holds or a privileged port names ``port``, an address that is not this machine's
(or a name that does not resolve) names ``host``."""

from __future__ import annotations

import errno
from pathlib import Path

from inferplan.errors import InvalidScenarioError

# Linux ip-sysctl, ip_unprivileged_port_start: "the first unprivileged port in the network namespace. Privileged ports
# require root or CAP_NET_BIND_SERVICE in order to bind to them ... Default: 1024"
# (https://git.zx2c4.com/linux-dev/diff/?id=4548b683b78137f8eadeb312b94e20bb0d4a7141, Documentation/networking/ip-sysctl.txt)
UNPRIVILEGED_PORT_START_FILE = Path("/proc/sys/net/ipv4/ip_unprivileged_port_start")
DEFAULT_UNPRIVILEGED_PORT_START = 1024
DEFAULT_PORT = 8000  # `inferplan serve`'s own
MAX_PORT = 65535


def unprivileged_port_start(path: Path = UNPRIVILEGED_PORT_START_FILE) -> int:
    """The first port a user other than root may listen on: the kernel's setting where it can be read, else 1024."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return DEFAULT_UNPRIVILEGED_PORT_START


def next_port(port: int) -> int:
    """The port to try after ``port``, which another server holds: the next one, or the default after the last."""
    return port + 1 if port < MAX_PORT else DEFAULT_PORT


def check_listen(host: str, port: int, problem: OSError | None, *, first_unprivileged: int | None = None) -> None:
    """Refuse listening on ``host:port`` for the ``problem`` a trial bind met (None: it can be listened on);
    ``first_unprivileged``: the first port a user may take (default: this machine's setting)."""
    if problem is None:
        return
    said = f"cannot listen on {host}:{port}: {problem.strerror or problem}"
    if problem.errno == errno.EADDRINUSE:
        raise InvalidScenarioError(said, field="port",
                                   allowed=f"a free port (another server holds {port}), e.g. {next_port(port)}")
    if problem.errno in (errno.EACCES, errno.EPERM):
        start = unprivileged_port_start() if first_unprivileged is None else first_unprivileged
        raise InvalidScenarioError(said, field="port", allowed=(
            f"a port from {start} up (below it only root or a process with CAP_NET_BIND_SERVICE may listen), "
            f"e.g. {max(start, DEFAULT_PORT)}"))
    raise InvalidScenarioError(said, field="host", allowed="an address of this machine, e.g. 127.0.0.1 or 0.0.0.0")
