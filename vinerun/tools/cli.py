"""The ``vinerun`` command."""

from __future__ import annotations

import argparse
import sys

from vinerun import __version__
from vinerun.errors import VinerunError
from vinerun.tools import benchmark, compile_tool, convert, devices, quantize, serve, speech


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vinerun", description="vinerun: an inference runtime with OpenVINO's API.")
    parser.add_argument("--version", action="version", version=f"vinerun {__version__}")
    sub = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    devices.add_parser(sub)
    benchmark.add_parser(sub)
    compile_tool.add_parser(sub)
    convert.add_parser(sub)
    quantize.add_parser(sub)
    serve.add_parser(sub)
    speech.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except VinerunError as e:
        print(f"vinerun {args.command}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
