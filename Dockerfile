# plugkit in a container, for an agent that runs inside the same container.
#
#   docker build -t plugkit .
#   docker run --rm -it --name plugkit plugkit      # the runner, in the foreground
#   docker exec -it plugkit plugkit exec:python 'print(1)'
#
# The runner binds 127.0.0.1 only, so clients must run in the same container
# (or share its network namespace): no port is EXPOSEd, publishing it would reach nothing.
# Install steps live in scripts/setup, the same script the README and CI use, so the image
# cannot drift from them (less the agent hosts tests/hosts drives, ~1.6 GB, and the semantic
# search layer's torch, ~1.5 GB: neither is used by the runner unless asked for).
FROM python:3.11-slim-bookworm

WORKDIR /opt/plugkit
COPY . /opt/plugkit
RUN apt-get update -qq \
 && PLUGKIT_SETUP_HOSTS=0 PLUGKIT_SETUP_SEMANTIC=0 scripts/setup \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 1000 agent

ENV PATH="/opt/plugkit/.venv/bin:${PATH}" \
    PLUGKIT_HOME="/home/agent/.local/state/plugkit" \
    PLUGKIT_PORT="32882"
USER agent
WORKDIR /home/agent
# The port the runner was told to take (PLUGKIT_PORT, as `docker run -e` may change it).
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s \
  CMD ["python", "-c", "import json, os, urllib.request; r = urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('PLUGKIT_PORT', '32882'), timeout=2); assert json.load(r)['service'] == 'plugkit-runner'"]
CMD ["python", "-m", "runner"]
