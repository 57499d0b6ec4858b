# transformer_viz for a class: CPU torch, a non-root user, the packaged Streamlit settings.
#   docker build -t transformer-viz .
#   docker run -p 8501:8501 transformer-viz          # one machine; several: deploy/compose.yaml
#   docker build --build-arg EXTRAS=redis,hf -t transformer-viz .   # with Hugging Face models (transformer_viz.weights.hf)
# A reproducible base: an exact tag (the Python CI tests with). For a byte-identical one, append the digest that
# `docker buildx imagetools inspect python:3.11.7-slim-bookworm` prints (FROM python:3.11.7-slim-bookworm@sha256:...).
FROM python:3.11.7-slim-bookworm

ENV PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# torch alone from PyTorch's CPU index, the version README pins (README, "CPU torch first"): PyPI's Linux wheel
# would pull several GB of CUDA libraries. The package's own install below keeps it.
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu

ARG EXTRAS=redis
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY transformer_viz ./transformer_viz
RUN pip install ".[${EXTRAS}]" && rm -rf /src

RUN useradd --create-home --uid 1000 tviz  # uid 1000: what Hugging Face Spaces runs as
USER tviz
WORKDIR /home/tviz

# The server's limits (transformer_viz/app/server/limits.py); TVIZ_REDIS_URL shares class rooms between replicas.
# 0: one training at a time per CPU of the container's quota (`docker run --cpus 2`: two), else per core it may use.
# transformer-viz serves with TVIZ_HF_DOWNLOADS=0 unless it is set (`-e TVIZ_HF_DOWNLOADS=1` lets sessions download).
ENV TVIZ_TRAININGS_AT_ONCE=0
EXPOSE 8501
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"]
# Inside its container the server listens on every interface; publish the port you choose.
CMD ["transformer-viz", "--host", "0.0.0.0", "--port", "8501"]
