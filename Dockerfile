# plugkit runner in a container. The runner binds loopback only, so run it with
# the host network (docker run --network host) or exec into the container to use it.
FROM python:3.11-slim-bookworm

RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium socat gcc g++ nodejs npm procps \
 && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 1000 agent
WORKDIR /opt/plugkit
COPY pyproject.toml README.md ./
COPY plugkit ./plugkit
COPY runner ./runner
COPY client ./client
RUN pip install --no-cache-dir .

USER agent
ENV PLUGKIT_HOME=/home/agent/.local/state/plugkit
HEALTHCHECK --interval=30s --timeout=3s CMD plugkit runner status >/dev/null || exit 1
CMD ["python", "-m", "runner"]
