"""`fed-gen/<Program>/bin/federate__<name> -i FEDERATION_ID`: ask the running federated program with
that id (`lf.get_federation_id()`) to start its transient federate <name> again. lfrl starts and
supervises the process (lfpy/runtime/federation/transient.py); this returns once lfrl has the request, or
exits with status 1 and the reason."""

from __future__ import annotations

import argparse
import socket
import sys

from lfpy.runtime.federation.transient import launch_socket, launcher_name


def main(argv: list[str]) -> int:
    name, rest = argv[0], argv[1:]
    prog = launcher_name(name)
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument("-i", "--id", required=True, help="the federation's id (lf.get_federation_id())")
    args = parser.parse_args(rest)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(launch_socket(args.id))
            conn.sendall(name.encode())
            conn.shutdown(socket.SHUT_WR)
            reply = conn.recv(4096).decode()
    except OSError as exc:
        print(f"{prog}: error: no running federation with id '{args.id}' ({exc.strerror or exc})", file=sys.stderr)
        return 1
    if reply != "ok":
        print(f"{prog}: {reply or 'error: the federation ended before it answered'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
