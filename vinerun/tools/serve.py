"""``vinerun serve``: an OpenVINO Model Server compatible model server (same flags, config.json, APIs).

    vinerun serve                                    # the bundled demo model on http://0.0.0.0:8000
    vinerun serve --model_name resnet --model_path models/resnet --rest_port 8000 --port 9000
    vinerun serve --config_path config.json --rest_port 8000 --metrics_enable
"""

from __future__ import annotations

import argparse

from vinerun.serving.config import ServerConfig, add_arguments

EPILOG = """\
With no --model_name/--model_path/--config_path it serves the bundled demo model 'demo' on CPU
(REST on port 8000 and gRPC on 9000 unless --rest_port/--port say otherwise).
Endpoints: KServe v2 REST /v2/health/{live,ready}, /v2/models/{m}[/versions/{v}][/ready|/infer];
TensorFlow Serving REST /v1/models/{m}[/versions/{v}][/metadata|:predict]; /v1/config, /v1/config/reload;
/metrics with --metrics_enable; gRPC (KServe v2 + TensorFlow Serving) on --port. See docs/serving.md."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve models over KServe v2 / TensorFlow Serving REST and gRPC (like OVMS)",
                       description="Serve models from a repository with OpenVINO Model Server's flags and APIs.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vinerun.serving.server import Server

    Server(ServerConfig.from_namespace(args)).run()
    return 0
