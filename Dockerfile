# syntax=docker/dockerfile:1
# kubemock: one image for every service of docker-compose.yml (the API server, the controller
# manager, the smoke test). Multi-stage: build with the Rust toolchain, run on a slim Debian.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
# The registry and the target directory are cache mounts: a rebuild after a change compiles
# only what changed, not every dependency again. The binary is copied out of the cached
# target directory, which the next stage cannot see.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p kubemock \
    && cp target/release/kubemock /usr/local/bin/kubemock

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/kubemock /usr/local/bin/kubemock
COPY scripts/compose-smoke.sh /usr/local/bin/compose-smoke.sh
EXPOSE 6443
ENTRYPOINT ["kubemock"]
CMD ["serve", "--bind", "0.0.0.0", "--port", "6443"]
