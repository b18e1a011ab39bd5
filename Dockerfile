# syntax=docker/dockerfile:1
# The sluice gateway image: `sluice serve --config /etc/sluice/rate-limits.yaml` as a non-root user, on a read-only
# root filesystem if you like (nothing is written outside /tmp). From the repository root:
#
#   docker build -t sluice .                      (the default, multi-stage build)
#   podman build --format docker -t sluice .      (podman's default OCI format drops the HEALTHCHECK)
#   docker run --rm -p 8080:8080 sluice demo      (the example configuration in front of an echo upstream)
#   docker run --rm -p 8080:8080 -v "$PWD/rate-limits.yaml:/etc/sluice/rate-limits.yaml:ro" sluice
#
# Without access to the npm registry from inside the build (an air-gapped builder), build on the host and copy
# the result in: `npm ci && npm run build && node scripts/image-app.mjs image-app`, then
# `docker build --target prebuilt -t sluice .`. Both targets hold the same files and settings.
# docs/production.md has the image's size, the probes, signals and the Kubernetes manifests.

# Every stage's base: Node.js 24 on Debian slim (glibc; the gateway has no native module). Name another image
# (a mirror, a pinned digest) with --build-arg NODE_IMAGE=...; it needs node on PATH, and npm for the build stage.
ARG NODE_IMAGE=docker.io/library/node:24-bookworm-slim

# build: the locked dependencies, dev ones included, then the build, then both packages packed and installed
# without dev dependencies into /opt/sluice, as `npm install @sluice/gateway` would lay them out.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
ENV npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
# The manifests first, so that the dependency layer is rebuilt only when the lock file changes.
COPY package.json package-lock.json ./
COPY packages/sluice/package.json packages/sluice/package.json
COPY packages/gateway/package.json packages/gateway/package.json
RUN --mount=type=cache,target=/root/.npm npm ci
COPY . .
RUN --mount=type=cache,target=/root/.npm npm run build && node scripts/image-app.mjs /opt/sluice

# runtime-base: what both targets share. No shell is needed at run time: the entry point, the health check and
# the default command are exec forms.
FROM ${NODE_IMAGE} AS runtime-base
LABEL org.opencontainers.image.title="sluice" \
      org.opencontainers.image.description="Sluice rate limiting gateway" \
      org.opencontainers.image.licenses="Apache-2.0"
# SLUICE_DEFAULT_HOST and SLUICE_DEMO_HOST: a gateway or demo on the container's loopback could not be reached
# through a published port, while the health check (asking 127.0.0.1) still passed. SLUICE_DEFAULT_HOST is the
# listen address of serve when the mounted file sets no server.host; a file's server.host and --host win.
ENV NODE_ENV=production \
    PATH=/opt/sluice/node_modules/.bin:$PATH \
    SLUICE_DEFAULT_HOST=0.0.0.0 \
    SLUICE_DEMO_HOST=0.0.0.0 \
    SLUICE_HEALTH_URL=http://127.0.0.1:8080/health
WORKDIR /opt/sluice
# A numeric user (the base image's `node`, 1000): Kubernetes' runAsNonRoot can only verify a numeric one. The
# application's files stay owned by root, so the gateway cannot change its own code.
USER 1000:1000
EXPOSE 8080
# SIGTERM drains: requests in flight finish within server.shutdownTimeout, new connections are refused, exit 0.
# The gateway itself is PID 1 (exec form, no shell in between) and handles the signal.
STOPSIGNAL SIGTERM
# For docker and podman (Kubernetes ignores it and uses the Deployment's probes). SLUICE_HEALTH_URL follows a
# configuration that moves server.port.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch(process.env.SLUICE_HEALTH_URL).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["sluice"]
CMD ["serve", "--config", "/etc/sluice/rate-limits.yaml"]

# prebuilt: the application folder made on the host by scripts/image-app.mjs.
FROM runtime-base AS prebuilt
COPY image-app/ /opt/sluice/

# runtime (the default target): the application folder from the build stage.
FROM runtime-base AS runtime
COPY --from=build /opt/sluice/ /opt/sluice/
