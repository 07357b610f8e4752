# Build the control plane's binaries statically and ship them in a minimal,
# non-root image. The binaries sit at the root of the image: the Helm chart
# runs /controller-manager (controllerManager.command), and /kubefedctl is
# there for jobs and debugging.
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
COPY --from=build /out/controller-manager /controller-manager
COPY --from=build /out/kubefedctl /kubefedctl
USER 65532:65532
ENTRYPOINT ["/controller-manager"]
