# The service in a container: Deno's official image, dependencies cached and the browser console
# built at build time, run as the image's unprivileged user with the embedded database in a volume.
# docker build -t energy-saving-service . && docker run -p 8000:8000 -v energy-data:/data energy-saving-service
FROM denoland/deno:2.9.6

WORKDIR /app

# Dependencies first: a change of the sources reuses this layer.
COPY deno.json deno.lock ./
RUN deno install --frozen

COPY . .
# Every module the service loads (tracing's, imported only when configured, included), then the
# console's bundle; the service does not rebuild it (BUILD_CONSOLE=false) and may not write /app.
RUN deno cache --frozen src/main.ts scripts/seed.ts scripts/keys.ts \
  && deno task console:build \
  && mkdir -p /data \
  && chown -R deno:deno /data /deno-dir /app/node_modules

ENV PORT=8000 \
    HOST=0.0.0.0 \
    DATA_DIR=/data \
    BUILD_CONSOLE=false \
    LOG_FORMAT=json
# The embedded database and demo-keys.json; unused with DATABASE_URL.
VOLUME ["/data"]
EXPOSE 8000

USER deno

# Ready means migrated, routines installed and the database answering (docs/operations.md).
HEALTHCHECK --interval=15s --timeout=5s --start-period=90s --retries=3 \
  CMD ["deno", "eval", "--no-config", "const r = await fetch(`http://127.0.0.1:${Deno.env.get('PORT') ?? 8000}/health/ready`).catch(() => null); Deno.exit(r?.ok ? 0 : 1)"]

# Exec form: SIGTERM reaches deno, which finishes requests in flight before it stops. The V8 flags
# are service.env's, as for `deno task start`.
CMD ["run", "-A", "--unstable-no-legacy-abort", "--env-file=service.env", "--frozen", "--cached-only", "src/main.ts"]
