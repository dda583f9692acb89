"""The model server: OVMS-compatible config, repository, data plane, REST (and gRPC) transports.

>>> from vinerun.serving.config import ServerConfig
>>> from vinerun.serving.server import Server
>>> server = Server(ServerConfig.from_args(["--model_name", "m", "--model_path", "models/m", "--rest_port", "8000"]))
"""
