"""Start the fault-matrix runner of Python's httpx adapter.

``python3 main.py (async|sync) [--import-path DIR]... SCENARIOS.json``: the
folders given are put first on ``sys.path`` (httpx is installed into one by
scripts/bootstrap.d/python.sh), then ``runner`` is imported and run.
"""

import sys


def main() -> int:
    """Put the import paths in place, then run the runner."""
    args = sys.argv[1:]
    paths: list[str] = []
    while len(args) >= 2 and args[0] == "--import-path":
        paths.append(args[1])
        args = args[2:]
    sys.path[1:1] = paths
    # httpx, which the runner imports, is importable only from here on.
    import runner

    return runner.main(args)


if __name__ == "__main__":
    sys.exit(main())
