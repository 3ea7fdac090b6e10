"""``python -m skdp.verify receipt.json``: recompute a receipt's epsilon.

Reads a receipt written by :func:`skdp.receipt` (``json.dump``), composes the
ledgers of its steps with :func:`skdp.privacy.verify`, prints the epsilon at
the receipt's delta, and exits with status 1 if it exceeds the epsilon the
receipt states (by more than a relative ``1e-6``).
"""

import argparse
import json
import math
import sys

from .privacy import verify


def main(argv=None):
    """Command-line entry point; returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 if the recomputed epsilon is at most the stated one, else 1.

    Examples
    --------
    >>> main(["--help"])  # doctest: +SKIP
    """
    parser = argparse.ArgumentParser(
        prog="python -m skdp.verify",
        description="Recompute the epsilon of an skdp privacy receipt.",
    )
    parser.add_argument("receipt", help="a JSON file written from skdp.receipt(...)")
    args = parser.parse_args(argv)
    with open(args.receipt) as f:
        record = json.load(f)
    epsilon = verify(record)
    stated = record.get("epsilon")
    stated = math.inf if stated is None else float(stated)
    print(f"epsilon={epsilon:.10g} at delta={record['delta']:.3g} (stated {stated:.10g})")
    return 0 if epsilon <= stated * (1 + 1e-6) else 1


if __name__ == "__main__":
    sys.exit(main())
