# syntax=docker/dockerfile:1
#
# compactd container image: a locked release build, then a small non-root runtime.
#
#   docker build -t compactd .
#   docker run --rm -p 8080:8080 compactd
#
# RUNTIME_BASE can be swapped for any Debian-bookworm-compatible base (scripts/container-smoke
# uses a locally debootstrapped one). The runtime stage only copies
# /app/target/release/compactd out of the `builder` stage, so a pre-built binary can stand in
# for it with `--build-context builder=DIR` (DIR/app/target/release/compactd).

ARG RUNTIME_BASE=debian:bookworm-slim

# ---------------------------------------------------------------------------------------------
FROM rust:1-bookworm AS builder
WORKDIR /app

# Dependencies first, against stub targets, so source edits do not rebuild the dependency
# layer. Cargo.toml names explicit test and bench targets; `cargo build --bin` never compiles
# them but the manifest needs their files, so they stay stubs (tests/ and benches/ are not
# in the build context, see .dockerignore).
COPY Cargo.toml Cargo.lock ./
COPY crates/core/Cargo.toml crates/core/
COPY crates/hermes/Cargo.toml crates/hermes/
RUN mkdir -p src benches crates/core/src crates/hermes/src \
 && echo 'fn main() {}' > src/main.rs \
 && touch src/lib.rs crates/core/src/lib.rs crates/hermes/src/lib.rs \
 && for f in benches/prepare.rs benches/scaling.rs $(sed -n 's/^path = "\(tests\/.*\)"$/\1/p' Cargo.toml); do \
      mkdir -p "$(dirname "$f")" && echo 'fn main() {}' > "$f"; done \
 && cargo build --release --locked --bin compactd \
 && rm -rf src crates/core/src crates/hermes/src target/release/compactd \
      target/release/deps/compactd-* target/release/deps/libcompactd-* \
      target/release/deps/compactd_* target/release/deps/libcompactd_* \
      target/release/.fingerprint/compactd-*

# The real sources: the service and its two core crates (the prompts are compiled in with
# include_str!).
COPY src ./src
COPY crates ./crates
COPY prompts ./prompts
RUN cargo build --release --locked --bin compactd \
 && strip target/release/compactd

# ---------------------------------------------------------------------------------------------
FROM ${RUNTIME_BASE} AS runtime

# No CA bundle is needed: reqwest uses rustls with the compiled-in webpki-roots (see Cargo.lock),
# so HTTPS to model providers works without ca-certificates. Nothing is installed with apt.
RUN groupadd --system --gid 10001 compactd \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin compactd

COPY --from=builder /app/target/release/compactd /usr/local/bin/compactd
# The shipped prompts, as files, so they can be read and overridden (mount another directory
# over this path, or point COMPACTD_PROMPTS_DIR elsewhere). The same text is compiled in.
COPY prompts/ /usr/share/compactd/prompts/

ENV COMPACTD_LISTEN=0.0.0.0:8080 \
    COMPACTD_LOG_FORMAT=json \
    COMPACTD_PROMPTS_DIR=/usr/share/compactd/prompts

USER 10001:10001
EXPOSE 8080

# bookworm-slim has no curl: bash's /dev/tcp asks /healthz on the port from COMPACTD_LISTEN.
HEALTHCHECK --interval=30s --timeout=5s --start-period=5s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${COMPACTD_LISTEN##*:} && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -n1 <&3 | grep -q ' 200 '"]

ENTRYPOINT ["/usr/local/bin/compactd"]
CMD ["serve"]
