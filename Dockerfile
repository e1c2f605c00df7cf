# toolshed: a static binary on an empty base.
#
#   docker build -t toolshed:dev --build-arg VERSION=$(git describe --tags --always) .
#   docker run --rm -p 8080:8080 -e TOOLSHED_TOKEN=secret toolshed:dev serve --http 0.0.0.0:8080
#
# The image holds the binary, its LICENSE and NOTICE (in /usr/share/doc/toolshed), CA
# certificates, a passwd/group naming the nonroot user (65532, as distroless does), /tmp,
# and /var/lib/toolshed (the search log's SQLite file) and /var/cache/toolshed (the
# embedding cache), both owned by nonroot. Nothing else: no
# shell, no Node.js. MCP servers launched over stdio (npx ...) need a runtime in the
# image: build Dockerfile.node instead, or reach those servers over HTTP ("url:" in the
# config). With a read-only root filesystem, mount volumes on /tmp, /var/lib/toolshed and
# /var/cache/toolshed (deploy/k8s does), or point --db at PostgreSQL.
#
# The final stage is FROM scratch so that nothing is pulled for it; the files a base image
# would give are made in the build stage. internal/release's TestImage runs this build
# stage's commands and builds the final stage with buildah, then starts the image.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# The same line builds the release binaries (.goreleaser.yaml): no cgo (the SQLite driver is
# modernc.org/sqlite, pure Go), so the binary has no interpreter and no shared library.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/toolshed/toolshed/gateway.Version=${VERSION}" -o /out/rootfs/usr/local/bin/toolshed ./cmd/toolshed
# COPY makes what it copies root's unless told otherwise (--chown), so the directories nonroot
# writes are copied from an empty one with --chown below.
RUN mkdir -p /out/rootfs/etc/ssl/certs /out/rootfs/tmp /out/rootfs/usr/share/doc/toolshed /out/empty && \
    cp /etc/ssl/certs/ca-certificates.crt /out/rootfs/etc/ssl/certs/ca-certificates.crt && \
    cp LICENSE NOTICE /out/rootfs/usr/share/doc/toolshed/ && \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /out/rootfs/etc/passwd && \
    printf 'root:x:0:\nnonroot:x:65532:\n' > /out/rootfs/etc/group && \
    chmod 1777 /out/rootfs/tmp

FROM scratch
COPY --from=build /out/rootfs/ /
COPY --from=build --chown=65532:65532 /out/empty/ /home/nonroot/
COPY --from=build --chown=65532:65532 /out/empty/ /var/lib/toolshed/
COPY --from=build --chown=65532:65532 /out/empty/ /var/cache/toolshed/
ENV HOME=/home/nonroot \
    XDG_DATA_HOME=/var/lib \
    XDG_CACHE_HOME=/var/cache \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
WORKDIR /home/nonroot
EXPOSE 8080 8081 9090
VOLUME ["/var/lib/toolshed"]
ENTRYPOINT ["/usr/local/bin/toolshed"]
CMD ["serve", "--http", "0.0.0.0:8080"]
