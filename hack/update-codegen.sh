#!/usr/bin/env bash
# Generates the VirtualMachine API's typed client code into
# operator/vm/generated, as k8s.io/code-generator's kube_codegen.sh
# (gen_client --with-watch --with-applyconfig) does, but with the generators
# pinned in go.mod (`go tool`) and every flag written out:
#
#   applyconfiguration   apply configurations for server-side apply
#   clientset/versioned  the typed clientset (with Apply and ApplyStatus, and
#                        a fake clientset for tests)
#   listers              listers over the informers' caches
#   informers            shared informers (externalversions)
#
# DeepCopy methods are controller-gen's (make generate runs it first), like
# those of the other API packages; register.go is written by hand.
#
# The output directory is removed first, so types that are gone leave
# nothing behind. Run it through `make generate`; `make verify` checks its
# output is fresh.
set -euo pipefail
cd "$(dirname "$0")/.."

module=github.com/kubeharness/kubeharness
boilerplate=hack/boilerplate.go.txt
# The API packages clients are generated for (those with +genclient types),
# as group/version below apis.
apis=operator/api
groups=(cloudnative/v1alpha1)
out=operator/vm/generated

input_pkgs=()
client_inputs=()
for gv in "${groups[@]}"; do
  input_pkgs+=("$module/$apis/$gv")
  client_inputs+=(--input "$gv")
done

rm -rf "$out"

# No --openapi-schema: the apply configurations and the clientset's Apply
# methods need none; without it applyconfiguration-gen only leaves out the
# Extract<Kind> functions (extracting a field manager's configuration from
# managedFields), which need an OpenAPI schema of the types.
go tool applyconfiguration-gen \
  --go-header-file "$boilerplate" \
  --output-dir "$out/applyconfiguration" \
  --output-pkg "$module/$out/applyconfiguration" \
  "${input_pkgs[@]}"

go tool client-gen \
  --go-header-file "$boilerplate" \
  --output-dir "$out/clientset" \
  --output-pkg "$module/$out/clientset" \
  --clientset-name versioned \
  --apply-configuration-package "$module/$out/applyconfiguration" \
  --input-base "$module/$apis" \
  "${client_inputs[@]}"

go tool lister-gen \
  --go-header-file "$boilerplate" \
  --output-dir "$out/listers" \
  --output-pkg "$module/$out/listers" \
  "${input_pkgs[@]}"

go tool informer-gen \
  --go-header-file "$boilerplate" \
  --output-dir "$out/informers" \
  --output-pkg "$module/$out/informers" \
  --versioned-clientset-package "$module/$out/clientset/versioned" \
  --listers-package "$module/$out/listers" \
  "${input_pkgs[@]}"
