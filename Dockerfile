# Build the control plane's binaries statically and ship them in a minimal,
# non-root image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/kubefed-io/kubefed/pkg/version.Version=${VERSION}" \
      -o /out/controller-manager ./cmd/controller-manager && \
    CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/kubefed-io/kubefed/pkg/version.Version=${VERSION}" \
      -o /out/kubefedctl ./cmd/kubefedctl

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/controller-manager /out/kubefedctl /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/controller-manager"]
