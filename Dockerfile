# vinerun model server image: `vinerun serve` with OpenVINO Model Server's flags.
#   docker build -t vinerun:latest .
#   docker run -p 8000:8000 -p 9000:9000 -v $PWD/models:/models vinerun:latest \
#       --model_name resnet --model_path /models/resnet --rest_port 8000 --port 9000
# With no arguments it serves the bundled demo model on port 8000.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /opt/vinerun

# CPU-only PyTorch first (the default index would pull CUDA wheels), then vinerun and its dependencies.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0
COPY pyproject.toml README.md ./
COPY vinerun ./vinerun
RUN pip install . && useradd --create-home --uid 5000 vinerun && mkdir -p /models && chown vinerun /models

USER vinerun
EXPOSE 8000 9000
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:8000/v2/health/ready')" || exit 1
ENTRYPOINT ["vinerun", "serve"]
CMD ["--rest_port", "8000", "--port", "9000"]
