# The kubeharness manager image: the static manager binary on an empty base.
# `make docker-build` compiles bin/image/manager first, so building the
# image pulls nothing (FROM scratch is not fetched from any registry) and
# works the same offline and on hosted CI runners.
FROM scratch
COPY manager /manager
# The distroless "nonroot" user; the Deployment also sets runAsNonRoot.
USER 65532:65532
ENTRYPOINT ["/manager"]
