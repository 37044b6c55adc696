"""``python -m tests.distributed.fault_cli FAULT ITERATION RANK grstream-arguments...``: the
``grstream`` command (grstream.cli.main) with a fault injected at the end of iteration
ITERATION of its runs, on rank RANK only (0 in one process): FAULT "term" sends the process
SIGTERM (as a scheduler does), "kill" SIGKILL (a rank that dies), "raise" raises. The exit
status is the command's. Under ``mpiexec`` every rank runs it; the fault tests drive it."""
import os
import signal
import sys

from grstream import cli
from grstream.engine import session


def main():
    fault, at, rank = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    me = int(os.environ.get("PMI_RANK", "0"))
    run = session.Session.run

    def faulty(self, program, **kwargs):
        given = kwargs.get("callback")

        def callback(st):
            if given is not None:
                given(st)
            if st.iteration == at and me == rank:
                if fault == "raise":
                    raise RuntimeError(f"injected failure at iteration {at}")
                os.kill(os.getpid(), signal.SIGTERM if fault == "term" else signal.SIGKILL)
        kwargs["callback"] = callback
        return run(self, program, **kwargs)

    session.Session.run = faulty
    sys.exit(cli.main(sys.argv[4:]))


if __name__ == "__main__":
    main()
