# kubemock: one image for both services of docker-compose.yml (the API server and the
# controller manager). Multi-stage: build with the Rust toolchain, run on a slim Debian.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p kubemock

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/kubemock /usr/local/bin/kubemock
EXPOSE 6443
ENTRYPOINT ["kubemock"]
CMD ["serve", "--bind", "0.0.0.0", "--port", "6443"]
